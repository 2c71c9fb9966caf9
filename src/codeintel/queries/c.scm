; Tags query for C.
; Origin: tree-sitter-c 0.24.2, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - added: a function *definition* is tagged on the whole function_definition node
;   (the shipped pattern tags only the declarator, so the tag had no body range); the
;   shipped declarator pattern remains for prototypes and unusual declarators;
; - added: macros (#define) as @definition.macro;
; - added: references, which the shipped query lacks: calls by name and through a
;   struct field (`s.f()`, `p->f()`) as @reference.call.

(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  ]) @definition.function

(struct_specifier name: (type_identifier) @name body:(_)) @definition.class

(declaration type: (union_specifier name: (type_identifier) @name)) @definition.class

(function_declarator declarator: (identifier) @name) @definition.function

(type_definition declarator: (type_identifier) @name) @definition.type

(enum_specifier name: (type_identifier) @name) @definition.type

(preproc_def name: (identifier) @name) @definition.macro

(preproc_function_def name: (identifier) @name) @definition.macro

; references (added)
