; Tags query for Go.
; Origin: tree-sitter-go 0.25.0, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - doc comments use #select-adjacent! (the shipped #set-adjacent! is not a predicate
;   tree-sitter-tags knows, so every preceding comment was kept);
; - the shipped patterns without a @definition/@reference capture (package, interface,
;   struct, import, var, const) produced no tags; they now carry kinds: interface and
;   struct types are @definition.interface / @definition.class (listed before the
;   generic type_spec pattern so they win), the package clause is @definition.module,
;   top-level var/const are @definition.variable / @definition.constant; imports dropped;
; - added: struct fields (@definition.field) and interface methods (@definition.method);
; - type references (`(type_identifier) @reference.type`) were already shipped.

(
  (comment)* @doc
  .
  (function_declaration
    name: (identifier) @name) @definition.function
  (#strip! @doc "^//\\s*")
  (#select-adjacent! @doc @definition.function)
)

(
  (comment)* @doc
  .
  (method_declaration
    name: (field_identifier) @name) @definition.method
  (#strip! @doc "^//\\s*")
  (#select-adjacent! @doc @definition.method)
)

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.class

(type_spec
  name: (type_identifier) @name) @definition.type

(type_alias
  name: (type_identifier) @name) @definition.type

(field_declaration
  name: (field_identifier) @name) @definition.field

(method_elem
  name: (field_identifier) @name) @definition.method

(package_clause (package_identifier) @name) @definition.module

(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))

(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
