; Reference patterns for TypeScript and TSX, after ecmascript.refs.scm (see languages.rs).
; Origin: tree-sitter-typescript 0.23.2 queries/tags.scm (MIT licence). Changed for
; code-intel: `implements` and `extends` are @reference.inherit, `new` is a call, and
; every other type name is @reference.type.

(required_parameter pattern: (identifier) @ignore)
(optional_parameter pattern: (identifier) @ignore)

(implements_clause
  [
    (type_identifier) @name
    (generic_type name: (type_identifier) @name)
  ]) @reference.inherit

(extends_clause
  value: (identifier) @name) @reference.inherit

(extends_type_clause
  type: [
    (type_identifier) @name
    (generic_type name: (type_identifier) @name)
  ]) @reference.inherit

(type_identifier) @name @reference.type
