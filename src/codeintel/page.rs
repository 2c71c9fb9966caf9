//! Bounded, honest lists: every list a tool returns says how many items exist, how many
//! it returns, and whether it was cut, so a client can page instead of guessing.

/// One page of a longer list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// How many items exist in all.
    pub total: usize,
    /// How many are in `items`.
    pub returned: usize,
    /// Whether items exist beyond this page.
    pub truncated: bool,
    pub offset: usize,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

/// How much of a list to return. A `limit` of 0 means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub offset: usize,
    pub limit: usize,
}

impl Window {
    /// Every item, for internal uses that page later themselves.
    pub(crate) const ALL: Window = Window {
        offset: 0,
        limit: 0,
    };
}

impl Window {
    /// The indices of a list of `total` items that this window keeps.
    pub(crate) fn range(self, total: usize) -> std::ops::Range<usize> {
        let start = self.offset.min(total);
        let end = if self.limit == 0 {
            total
        } else {
            start.saturating_add(self.limit).min(total)
        };
        start..end
    }
}

impl Default for Window {
    fn default() -> Self {
        Window {
            offset: 0,
            limit: 100,
        }
    }
}

impl<T> Page<T> {
    /// Cuts `all` to `window`.
    pub(crate) fn of(all: Vec<T>, window: Window) -> Page<T> {
        let total = all.len();
        let range = window.range(total);
        let items: Vec<T> = all
            .into_iter()
            .skip(range.start)
            .take(range.len())
            .collect();
        Page::cut(items, total, window)
    }

    /// A page that shows none of a list of `total` items, only how many there are; the
    /// next page starts at the first.
    pub(crate) fn counted(total: usize) -> Page<T> {
        Page {
            items: Vec::new(),
            total,
            returned: 0,
            truncated: total > 0,
            offset: 0,
            next_offset: (total > 0).then_some(0),
        }
    }

    /// A page of `items`, the part of a list of `total` items that `window` keeps
    /// ([`Window::range`]), cut by the caller.
    pub(crate) fn cut(items: Vec<T>, total: usize, window: Window) -> Page<T> {
        let returned = items.len();
        let end = window.offset.saturating_add(returned);
        let truncated = end < total;
        Page {
            items,
            total,
            returned,
            truncated,
            offset: window.offset,
            next_offset: truncated.then_some(end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_say_what_they_hold() {
        let p = Page::of(
            (0..10).collect(),
            Window {
                offset: 4,
                limit: 3,
            },
        );
        assert_eq!(
            (
                p.items.clone(),
                p.total,
                p.returned,
                p.truncated,
                p.next_offset
            ),
            (vec![4, 5, 6], 10, 3, true, Some(7))
        );
        let last = Page::of(
            (0..10).collect::<Vec<_>>(),
            Window {
                offset: 8,
                limit: 3,
            },
        );
        assert_eq!(
            (last.returned, last.truncated, last.next_offset),
            (2, false, None)
        );
        let all = Page::of(
            (0..10).collect::<Vec<_>>(),
            Window {
                offset: 0,
                limit: 0,
            },
        );
        assert_eq!((all.returned, all.truncated), (10, false));
    }
}
