//! The lexical side of semantic search, and the store of chunk texts: a tantivy index of
//! every chunk, ranked by BM25 over code-aware words ([`super::tokens`]).
//!
//! The catalog (`catalog.rs`) is the source of truth for which chunks exist; this index is
//! rebuilt from the files whenever its commit does not carry the catalog's generation
//! (a sync killed between the two writes).

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::chunk::Chunk;
use super::error::Error;
use super::tokens;

/// The tokenizer's name in tantivy's registry.
const CODE_TOKENIZER: &str = "code";
/// How much more a word in a chunk's symbol path counts than one in its text.
const NAME_BOOST: f32 = 2.0;
/// The writer's memory budget: tantivy's minimum per thread is 15 MB.
const WRITER_BYTES: usize = 50_000_000;

/// Words of code, for tantivy.
#[derive(Clone, Default)]
struct CodeTokenizer;

struct Words {
    tokens: Vec<Token>,
    at: usize,
}

impl TokenStream for Words {
    fn advance(&mut self) -> bool {
        self.at += 1;
        self.at <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.at - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.at - 1]
    }
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = Words;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Words {
        let mut out = Vec::new();
        tokens::for_each_word(text, |w| {
            out.push(Token {
                // Offsets are unused (no snippets from tantivy); positions are word order.
                offset_from: 0,
                offset_to: 0,
                position: out.len(),
                text: w.to_string(),
                position_length: 1,
            });
        });
        Words { tokens: out, at: 0 }
    }
}

/// The fields of a chunk document.
#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    path: Field,
    symbol: Field,
    kind: Field,
    start: Field,
    end: Field,
    hash: Field,
    /// The text that is searched: path, symbol and the chunk's lines.
    body: Field,
    /// The symbol path and path words again, searched with a boost: a query naming a
    /// definition finds the definition before the code that mentions it.
    names: Field,
    /// The chunk's lines, stored for display.
    text: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let body_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        path: b.add_text_field("path", STRING | STORED),
        symbol: b.add_text_field("symbol", STORED),
        kind: b.add_text_field("kind", STORED),
        start: b.add_u64_field("start", STORED),
        end: b.add_u64_field("end", STORED),
        hash: b.add_text_field("hash", STORED),
        body: b.add_text_field("body", body_options.clone()),
        names: b.add_text_field("names", body_options),
        text: b.add_text_field("text", STORED),
    };
    (b.build(), fields)
}

/// A chunk as stored in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredChunk {
    pub(crate) id: String,
    pub(crate) path: String,
    pub(crate) symbol: String,
    pub(crate) kind: String,
    pub(crate) start_line: u32,
    pub(crate) end_line: u32,
    /// The content hash of what is embedded (hex).
    pub(crate) hash: String,
    pub(crate) text: String,
}

impl StoredChunk {
    /// The chunk this was stored from.
    pub(crate) fn as_chunk(&self) -> Chunk {
        Chunk {
            id: self.id.clone(),
            path: self.path.clone(),
            start_line: self.start_line,
            end_line: self.end_line,
            symbol: self.symbol.clone(),
            kind: self.kind.clone(),
            text: self.text.clone(),
        }
    }
}

/// The lexical index in a directory.
pub(crate) struct Lexical {
    index: Index,
    fields: Fields,
    reader: IndexReader,
}

impl Lexical {
    /// Opens the index in `dir`, creating an empty one when there is none or the one there
    /// cannot be opened (it is derived data: the next sync refills it).
    pub(crate) fn open_or_create(dir: &Path) -> Result<Lexical, Error> {
        let (schema, fields) = schema();
        crate::codeintel::state_dir::check_path(&dir.join("-")).map_err(|e| Error::io(dir, e))?;
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let index = match Index::open_in_dir(dir) {
            Ok(index) if index.schema() == schema => index,
            _ => {
                // Another schema or a damaged directory: start over.
                let _ = std::fs::remove_dir_all(dir);
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                Index::create_in_dir(dir, schema).map_err(|e| Error::lexical(dir, e))?
            }
        };
        Lexical::ready(index, fields, dir)
    }

    /// Opens an existing index for reading; `None` when there is none.
    pub(crate) fn open(dir: &Path) -> Result<Option<Lexical>, Error> {
        if !dir.join("meta.json").is_file() {
            return Ok(None);
        }
        let (schema, fields) = schema();
        let index = Index::open_in_dir(dir).map_err(|e| Error::lexical(dir, e))?;
        if index.schema() != schema {
            return Ok(None);
        }
        Lexical::ready(index, fields, dir).map(Some)
    }

    fn ready(index: Index, fields: Fields, dir: &Path) -> Result<Lexical, Error> {
        index.tokenizers().register(CODE_TOKENIZER, CodeTokenizer);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| Error::lexical(dir, e))?;
        Ok(Lexical {
            index,
            fields,
            reader,
        })
    }

    /// The catalog generation the last commit carries.
    pub(crate) fn generation(&self) -> Option<u64> {
        let metas = self.index.load_metas().ok()?;
        metas.payload?.parse().ok()
    }

    /// Replaces the chunks of `removed_paths` with `added`, commits with `generation`.
    pub(crate) fn update(
        &mut self,
        dir: &Path,
        clear: bool,
        removed_paths: &[String],
        added: &[(Chunk, String)],
        generation: u64,
    ) -> Result<(), Error> {
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(|e| Error::lexical(dir, e))?;
        if clear {
            writer
                .delete_all_documents()
                .map_err(|e| Error::lexical(dir, e))?;
        }
        for path in removed_paths {
            writer.delete_term(Term::from_field_text(self.fields.path, path));
        }
        let f = self.fields;
        for (chunk, hash) in added {
            let mut doc = TantivyDocument::default();
            doc.add_text(f.id, &chunk.id);
            doc.add_text(f.path, &chunk.path);
            doc.add_text(f.symbol, &chunk.symbol);
            doc.add_text(f.kind, &chunk.kind);
            doc.add_u64(f.start, u64::from(chunk.start_line));
            doc.add_u64(f.end, u64::from(chunk.end_line));
            doc.add_text(f.hash, hash);
            doc.add_text(
                f.body,
                format!("{}\n{}\n{}", chunk.path, chunk.symbol, chunk.text),
            );
            doc.add_text(f.names, &chunk.symbol);
            doc.add_text(f.text, &chunk.text);
            writer
                .add_document(doc)
                .map_err(|e| Error::lexical(dir, e))?;
        }
        let mut commit = writer
            .prepare_commit()
            .map_err(|e| Error::lexical(dir, e))?;
        commit.set_payload(&generation.to_string());
        commit.commit().map_err(|e| Error::lexical(dir, e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| Error::lexical(dir, e))?;
        self.reader.reload().map_err(|e| Error::lexical(dir, e))?;
        Ok(())
    }

    /// The best `limit` chunks for the words of `query`, best first, with their BM25 score.
    pub(crate) fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(StoredChunk, f32)>, Error> {
        let words = tokens::query_words(query);
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for w in &words {
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.body, w),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.names, w),
                        IndexRecordOption::WithFreqs,
                    )),
                    NAME_BOOST,
                )),
            ));
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(Error::lexical_query)?;
        let mut out = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(Error::lexical_query)?;
            out.push((self.stored(&doc), score));
        }
        Ok(out)
    }

    /// Chunks defining one of `identifiers` (keys as [`tokens::identifier_key`] gives
    /// them): those whose symbol ends with the name first, then their members, shorter
    /// symbol paths first.
    pub(crate) fn by_name(
        &self,
        identifiers: &[String],
        limit: usize,
    ) -> Result<Vec<StoredChunk>, Error> {
        if identifiers.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = identifiers
            .iter()
            .map(|w| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.names, w),
                    IndexRecordOption::Basic,
                ));
                (Occur::Should, q)
            })
            .collect();
        let searcher = self.reader.searcher();
        // Many chunks may mention a common name; look at enough to find its definitions.
        let top = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(limit * 20).order_by_score(),
            )
            .map_err(Error::lexical_query)?;
        let mut found: Vec<(usize, usize, StoredChunk)> = Vec::new();
        for (_, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(Error::lexical_query)?;
            let chunk = self.stored(&doc);
            let segments: Vec<String> = chunk
                .symbol
                .split('.')
                .map(tokens::identifier_key)
                .collect();
            let Some(at) = segments.iter().rposition(|s| identifiers.contains(s)) else {
                continue;
            };
            // 0: the symbol is the name; 1: a member of it.
            let order = usize::from(at + 1 != segments.len());
            found.push((order, chunk.symbol.len(), chunk));
        }
        found.sort_by(|a, b| (a.0, a.1, &a.2.id).cmp(&(b.0, b.1, &b.2.id)));
        Ok(found.into_iter().take(limit).map(|(_, _, c)| c).collect())
    }

    /// The chunk with this id.
    pub(crate) fn get(&self, id: &str) -> Result<Option<StoredChunk>, Error> {
        let searcher = self.reader.searcher();
        let query = TermQuery::new(
            Term::from_field_text(self.fields.id, id),
            IndexRecordOption::Basic,
        );
        let top = searcher
            .search(&query, &TopDocs::with_limit(1).order_by_score())
            .map_err(Error::lexical_query)?;
        match top.first() {
            Some((_, address)) => {
                let doc: TantivyDocument = searcher.doc(*address).map_err(Error::lexical_query)?;
                Ok(Some(self.stored(&doc)))
            }
            None => Ok(None),
        }
    }

    fn stored(&self, doc: &TantivyDocument) -> StoredChunk {
        let f = self.fields;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let number = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_u64())
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        StoredChunk {
            id: text(f.id),
            path: text(f.path),
            symbol: text(f.symbol),
            kind: text(f.kind),
            start_line: number(f.start),
            end_line: number(f.end),
            hash: text(f.hash),
            text: text(f.text),
        }
    }
}
