; Reference patterns for C, after c.scm's definitions (see languages.rs), moved
; there from c.scm. Added for code-intel: field reads, type names and any other use of a name (read). tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(parameter_declaration declarator: (identifier) @ignore)
(init_declarator declarator: (identifier) @ignore)

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    field: (field_identifier) @name)) @reference.call

(call_expression
  function: (parenthesized_expression (identifier) @name)) @reference.call

(field_expression field: (field_identifier) @name) @reference.read
(type_identifier) @name @reference.type
(identifier) @name @reference.read
