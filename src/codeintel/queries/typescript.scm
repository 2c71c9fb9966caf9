; Tags patterns for TypeScript and TSX, after ecmascript.scm.
; Origin: tree-sitter-typescript 0.23.2 queries/tags.scm, which holds only the
; TypeScript-specific patterns and is meant to follow the JavaScript query (MIT licence,
; see that crate). The TS and TSX grammars share these nodes, so both use this file.
; Added for code-intel: class fields holding a function (public_field_definition) as
; @definition.method, type aliases and enums as @definition.type, `namespace X {}`
; (internal_module) as @definition.module, `implements` types as
; @reference.implementation and `extends` classes as @reference.class.

; ---- TypeScript patterns (tree-sitter-typescript) ----

(function_signature
  name: (identifier) @name) @definition.function

(method_signature
  name: (property_identifier) @name) @definition.method

(abstract_method_signature
  name: (property_identifier) @name) @definition.method

(abstract_class_declaration
  name: (type_identifier) @name) @definition.class

(module
  name: (identifier) @name) @definition.module

(interface_declaration
  name: (type_identifier) @name) @definition.interface

(type_annotation
  (type_identifier) @name) @reference.type

(new_expression
  constructor: (identifier) @name) @reference.class

; ---- added for code-intel ----

(public_field_definition
  name: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.type

(internal_module
  name: (identifier) @name) @definition.module

(implements_clause
  [
    (type_identifier) @name
    (generic_type name: (type_identifier) @name)
  ]) @reference.implementation

(extends_clause
  value: (identifier) @name) @reference.class
