; Reference patterns for Go, after go.scm's definitions (see languages.rs), moved
; there from go.scm. Added for code-intel: field and package member reads and any other use of a name (read). tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(parameter_declaration name: (identifier) @ignore)
(short_var_declaration left: (expression_list (identifier) @ignore))

(call_expression
  function: [
    (identifier) @name
    (parenthesized_expression (identifier) @name)
    (selector_expression field: (field_identifier) @name)
    (parenthesized_expression (selector_expression field: (field_identifier) @name))
  ]) @reference.call

(type_identifier) @name @reference.type

(selector_expression field: (field_identifier) @name) @reference.read
(identifier) @name @reference.read
