; Reference patterns shared by JavaScript, TypeScript and TSX, after the definitions (see
; languages.rs: ecmascript.refs.scm, then the language's own refs, then ecmascript.reads.scm).
; Origin of the call patterns: tree-sitter-javascript 0.25.0, queries/tags.scm (MIT
; licence). Added for code-intel: each use of a name carries its kind: call (also `new`
; and JSX elements), inherit (`extends`), import (import and export specifiers) and, in
; ecmascript.reads.scm, read. Bindings (parameters, declarations) are @ignore'd first.

(variable_declarator name: (identifier) @ignore)
(arrow_function parameter: (identifier) @ignore)

(
  (call_expression
    function: (identifier) @name) @reference.call
  (#not-match? @name "^(require)$")
)

(call_expression
  function: (member_expression
    property: (property_identifier) @name)) @reference.call

(new_expression
  constructor: (_) @name) @reference.call


(import_specifier name: (identifier) @name) @reference.import
(import_clause (identifier) @name @reference.import)
(namespace_import (identifier) @name @reference.import)
(export_specifier name: (identifier) @name) @reference.import
