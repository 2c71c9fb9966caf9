; Reference patterns for Rust, after rust.scm's definitions (see languages.rs).
; Origin of the call and implementation patterns: tree-sitter-rust 0.24.0, queries/tags.scm
; (MIT licence). Added for code-intel: each use of a name carries its kind: call
; (functions, methods, macros, struct literals), inherit (`impl Trait for`, supertraits),
; import (`use` paths), decorator (attributes), type and read (any other use as a value,
; such as a field read or a path like `Kind::A`). Bindings (`let x`, parameters) are
; @ignore'd first. tree-sitter-tags keeps one tag per name, from the earliest pattern, so
; the specific kinds come before the catch-alls.

(let_declaration pattern: (identifier) @ignore)
(parameter pattern: (identifier) @ignore)
(closure_parameters (identifier) @ignore)
(field_initializer field: (field_identifier) @ignore)

(call_expression
    function: (identifier) @name) @reference.call

(call_expression
    function: (field_expression
        field: (field_identifier) @name)) @reference.call

(call_expression
    function: (scoped_identifier
        name: (identifier) @name)) @reference.call

(call_expression
    function: (generic_function
        function: [
          (identifier) @name
          (field_expression field: (field_identifier) @name)
          (scoped_identifier name: (identifier) @name)
        ])) @reference.call

(macro_invocation
    macro: [
      (identifier) @name
      (scoped_identifier name: (identifier) @name)
    ]) @reference.call

(struct_expression
    name: [
      (type_identifier) @name
      (scoped_type_identifier name: (type_identifier) @name)
    ]) @reference.call

(impl_item
    trait: [
      (type_identifier) @name
      (generic_type type: (type_identifier) @name)
      (scoped_type_identifier name: (type_identifier) @name)
    ]) @reference.inherit

(trait_item
    bounds: (trait_bounds
      [
        (type_identifier) @name
        (generic_type type: (type_identifier) @name)
        (scoped_type_identifier name: (type_identifier) @name)
      ])) @reference.inherit

(use_declaration argument: (identifier) @name @reference.import)
(use_declaration argument: (scoped_identifier name: (identifier) @name) @reference.import)
(use_list (identifier) @name @reference.import)
(use_list (scoped_identifier name: (identifier) @name) @reference.import)
(use_as_clause path: (identifier) @name @reference.import)
(use_as_clause path: (scoped_identifier name: (identifier) @name) @reference.import)
(scoped_use_list path: (identifier) @name @reference.import)
(scoped_use_list path: (scoped_identifier name: (identifier) @name) @reference.import)

(attribute_item
  (attribute
    [
      (identifier) @name
      (scoped_identifier name: (identifier) @name)
    ])) @reference.decorator

(scoped_type_identifier name: (type_identifier) @name) @reference.type
(type_identifier) @name @reference.type

(field_expression field: (field_identifier) @name) @reference.read
(scoped_identifier name: (identifier) @name) @reference.read
(identifier) @name @reference.read
