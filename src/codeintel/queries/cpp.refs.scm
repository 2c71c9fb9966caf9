; Reference patterns for C++, after cpp.scm's definitions (see languages.rs), moved
; there from cpp.scm. Added for code-intel: base classes (inherit), using declarations (import), field reads, type names and any other use of a name (read). tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(parameter_declaration declarator: (identifier) @ignore)
(init_declarator declarator: (identifier) @ignore)

(base_class_clause
  [
    (type_identifier) @name
    (qualified_identifier name: (type_identifier) @name)
    (template_type name: (type_identifier) @name)
  ]) @reference.inherit

(using_declaration (qualified_identifier name: (identifier) @name)) @reference.import

(call_expression
  function: [
    (identifier) @name
    (field_expression field: (field_identifier) @name)
    (qualified_identifier name: (identifier) @name)
    (qualified_identifier name: (qualified_identifier name: (identifier) @name))
    (qualified_identifier name: (qualified_identifier name: (qualified_identifier name: (identifier) @name)))
    (template_function name: (identifier) @name)
    (qualified_identifier name: (template_function name: (identifier) @name))
    (field_expression field: (template_method name: (field_identifier) @name))
  ]) @reference.call

(new_expression
  type: [
    (type_identifier) @name
    (qualified_identifier name: (type_identifier) @name)
    (template_type name: (type_identifier) @name)
  ]) @reference.call

(field_expression field: (field_identifier) @name) @reference.read
(type_identifier) @name @reference.type
(identifier) @name @reference.read
