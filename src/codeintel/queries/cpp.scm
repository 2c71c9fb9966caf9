; Tags query for C++.
; Origin: tree-sitter-cpp 0.23.4, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - added: function and method *definitions* are tagged on the whole function_definition
;   node (the shipped patterns tag only the declarator), including `ns::Type::f` (one
;   nested qualifier); the shipped declarator patterns remain for prototypes and in-class
;   declarations;
; - the shipped `@local.scope` capture inside a tags pattern did nothing; dropped;
; - added: namespaces (@definition.module), macros (@definition.macro), and unions with a
;   body;
; - added: references, which the shipped query lacks: calls by name, through a field
;   (`o.f()`, `p->f()`), qualified up to three levels (`ns::f()`, `a::b::c::f()`), and
;   templated (`f<T>()`) as @reference.call; `new T` as @reference.call (now in cpp.refs.scm).

(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name)
    (function_declarator declarator: (field_identifier) @name)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    (reference_declarator (function_declarator declarator: (identifier) @name))
  ]) @definition.function

(function_definition
  declarator: [
    (function_declarator declarator: (qualified_identifier name: (identifier) @name))
    (function_declarator declarator: (qualified_identifier name: (qualified_identifier name: (identifier) @name)))
    (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name)))
    (reference_declarator (function_declarator declarator: (qualified_identifier name: (identifier) @name)))
  ]) @definition.method

(struct_specifier name: (type_identifier) @name body:(_)) @definition.class

(declaration type: (union_specifier name: (type_identifier) @name)) @definition.class

(union_specifier name: (type_identifier) @name body:(_)) @definition.class

(function_declarator declarator: (identifier) @name) @definition.function

(function_declarator declarator: (field_identifier) @name) @definition.function

(function_declarator declarator: (qualified_identifier scope: (namespace_identifier) name: (identifier) @name)) @definition.method

(type_definition declarator: (type_identifier) @name) @definition.type

(enum_specifier name: (type_identifier) @name) @definition.type

(class_specifier name: (type_identifier) @name) @definition.class

(namespace_definition name: (namespace_identifier) @name) @definition.module

(preproc_def name: (identifier) @name) @definition.macro

(preproc_function_def name: (identifier) @name) @definition.macro

; references (added)
