; Tags query for C#.
; Origin: tree-sitter-c-sharp 0.23.5, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - removed the `(namespace_declaration ...) @module` pattern: tree-sitter-tags rejects
;   the `@module` capture (Invalid capture); the @definition.module pattern remains and
;   now also takes qualified names (`namespace A.B`) and file-scoped namespaces;
; - member calls are @reference.call (shipped: @reference.send), like every other
;   language here;
; - added: structs, records and enums (@definition.class), constructors and local
;   functions (@definition.method / @definition.function), properties (@definition.field),
;   delegates (@definition.type), bare and generic calls (@reference.call), and type
;   references in parameters, properties, return types and `new` (@reference.type /
;   @reference.class).

(class_declaration name: (identifier) @name) @definition.class

(struct_declaration name: (identifier) @name) @definition.class

(record_declaration name: (identifier) @name) @definition.class

(enum_declaration name: (identifier) @name) @definition.class

(interface_declaration name: (identifier) @name) @definition.interface

(method_declaration name: (identifier) @name) @definition.method

(constructor_declaration name: (identifier) @name) @definition.method

(local_function_statement name: (identifier) @name) @definition.function

(property_declaration name: (identifier) @name) @definition.field

(delegate_declaration name: (identifier) @name) @definition.type

(namespace_declaration name: [(identifier) (qualified_name)] @name) @definition.module

(file_scoped_namespace_declaration name: [(identifier) (qualified_name)] @name) @definition.module
