; Tags query for Java.
; Origin: tree-sitter-java 0.23.5, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - a call's tagged node is the whole method_invocation (the shipped query tagged only
;   its argument_list, which made a poor signature);
; - added: enum, record and annotation types (@definition.class / @definition.interface),
;   constructors (@definition.method), fields (@definition.field), and any other type
;   name as @reference.type (listed last so the more specific patterns win).

(class_declaration
  name: (identifier) @name) @definition.class

(enum_declaration
  name: (identifier) @name) @definition.class

(record_declaration
  name: (identifier) @name) @definition.class

(annotation_type_declaration
  name: (identifier) @name) @definition.interface

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

(field_declaration
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.field

(interface_declaration
  name: (identifier) @name) @definition.interface
