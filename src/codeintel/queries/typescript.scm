; Tags patterns for TypeScript and TSX, after ecmascript.scm.
; Origin: tree-sitter-typescript 0.23.2 queries/tags.scm, which holds only the
; TypeScript-specific patterns and is meant to follow the JavaScript query (MIT licence,
; see that crate). The TS and TSX grammars share these nodes, so both use this file.
; Added for code-intel: class fields holding a function (public_field_definition) as
; @definition.method, type aliases and enums as @definition.type, `namespace X {}`
; (internal_module) as @definition.module. The references are in typescript.refs.scm.

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

(public_field_definition
  name: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.type

(internal_module
  name: (identifier) @name) @definition.module
