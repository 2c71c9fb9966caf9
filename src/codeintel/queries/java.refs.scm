; Reference patterns for Java, after java.scm's definitions (see languages.rs), moved
; there from java.scm. Added for code-intel: imports, `extends`/`implements` (inherit), field reads and any other use of a name (read). tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(formal_parameter name: (identifier) @ignore)
(variable_declarator name: (identifier) @ignore)

(import_declaration (scoped_identifier name: (identifier) @name) @reference.import)

(method_invocation
  name: (identifier) @name
  arguments: (argument_list)) @reference.call

(type_list
  (type_identifier) @name) @reference.inherit

(object_creation_expression
  type: (type_identifier) @name) @reference.call

(object_creation_expression
  type: (generic_type (type_identifier) @name)) @reference.call

(superclass (type_identifier) @name) @reference.inherit

(type_identifier) @name @reference.type

(field_access field: (identifier) @name) @reference.read
(identifier) @name @reference.read
