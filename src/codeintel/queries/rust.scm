; Tags query for Rust.
; Origin: tree-sitter-rust 0.24.2, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - kinds as Rust names them: struct, enum, union, type, trait, impl, fn, mod, const,
;   static, macro, variant, field (functions in `impl` and `trait` bodies stay `method`);
; - methods are only functions inside `impl` and `trait` bodies (the shipped query also
;   tagged functions of inline `mod { }` blocks as methods);
; - added: trait method signatures, const/static items, `impl` blocks as
;   @definition.impl (so methods get the impl's type as their scope),
;   scoped calls (`Foo::new()`), generic calls (`f::<T>()`), scoped macros.

; ADT definitions

(struct_item
    name: (type_identifier) @name) @definition.struct

(enum_item
    name: (type_identifier) @name) @definition.enum

(union_item
    name: (type_identifier) @name) @definition.union

; type aliases

(type_item
    name: (type_identifier) @name) @definition.type

; method definitions (impl and trait bodies only)

(impl_item
  body: (declaration_list
    (function_item
        name: (identifier) @name) @definition.method))

(trait_item
  body: (declaration_list
    [
      (function_item
        name: (identifier) @name)
      (function_signature_item
        name: (identifier) @name)
    ] @definition.method))

; function definitions

(function_item
    name: (identifier) @name) @definition.fn

; functions and opaque types declared in `extern "C" { ... }` blocks (added; wasm-bindgen
; declares JavaScript classes as `pub type Array;` there).

(foreign_mod_item
  body: (declaration_list
    (function_signature_item
        name: (identifier) @name) @definition.fn))

; tree-sitter-rust 0.24 does not know `type X;` there: it is an ERROR node holding the
; `type` keyword and the name.
(foreign_mod_item
  body: (declaration_list
    (ERROR
      "type"
      .
      (identifier) @name) @definition.type))

; associated types of traits, with or without a default (added)

(trait_item
  body: (declaration_list
    (associated_type
        name: (type_identifier) @name) @definition.type))

; enum variants and struct fields (added)

(enum_variant
    name: (identifier) @name) @definition.variant

(field_declaration
    name: (field_identifier) @name) @definition.field

; trait definitions
(trait_item
    name: (type_identifier) @name) @definition.trait

; module definitions
(mod_item
    name: (identifier) @name) @definition.mod

; macro definitions

(macro_definition
    name: (identifier) @name) @definition.macro

; constants and statics

(const_item
    name: (identifier) @name) @definition.const

(static_item
    name: (identifier) @name) @definition.static

; impl blocks: the implementing type (added), also when it is a path (`io::Cursor<T>`), a
; primitive (`u128`), or reached through a reference, pointer, slice, array or `dyn`
; (`&'a A`, `*const T`, `[A::Item]`, `dyn Store`), named as ctags names them: the last
; segment of the inner type's path. Unit, tuple and never types have no name and are not
; tagged.

(impl_item
    type: [
      (type_identifier) @name
      (primitive_type) @name
      (generic_type type: (type_identifier) @name)
      (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
      (scoped_type_identifier name: (type_identifier) @name)
    ]) @definition.impl

(impl_item
    type: [
      (reference_type type: [
        (type_identifier) @name
        (primitive_type) @name
        (generic_type type: (type_identifier) @name)
        (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
        (scoped_type_identifier name: (type_identifier) @name)
        (dynamic_type trait: (type_identifier) @name)
        (array_type element: (type_identifier) @name)
        (array_type element: (scoped_type_identifier name: (type_identifier) @name))
        (array_type element: (primitive_type) @name)
      ])
      (pointer_type type: [
        (type_identifier) @name
        (primitive_type) @name
        (generic_type type: (type_identifier) @name)
      ])
      (array_type element: [
        (type_identifier) @name
        (primitive_type) @name
        (generic_type type: (type_identifier) @name)
        (scoped_type_identifier name: (type_identifier) @name)
      ])
      (dynamic_type trait: [
        (type_identifier) @name
        (generic_type type: (type_identifier) @name)
        (scoped_type_identifier name: (type_identifier) @name)
      ])
    ]) @definition.impl

