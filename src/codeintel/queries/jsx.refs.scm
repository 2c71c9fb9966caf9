; Reference patterns of the grammars with JSX (JavaScript and TSX; see languages.rs): a
; component used as an element is a call.

(jsx_opening_element name: (identifier) @name) @reference.call
(jsx_self_closing_element name: (identifier) @name) @reference.call
