; Tags query for PHP (grammar: tree-sitter-php LANGUAGE_PHP, i.e. PHP with inline HTML).
; Origin: tree-sitter-php 0.25.1, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - methods are @definition.method (shipped: @definition.function);
; - added: enums (@definition.class) and class constants (@definition.constant);
; - added: bare function calls `foo()` (function: (name)) as @reference.call; the shipped
;   query only tagged qualified (`\ns\foo()`) and variable (`$f()`) calls.

(namespace_definition
  name: (namespace_name) @name) @definition.module

(interface_declaration
  name: (name) @name) @definition.interface

(trait_declaration
  name: (name) @name) @definition.interface

(class_declaration
  name: (name) @name) @definition.class

(enum_declaration
  name: (name) @name) @definition.class

(property_declaration
  (property_element (variable_name (name) @name))) @definition.field

(const_declaration
  (const_element (name) @name)) @definition.constant

(function_definition
  name: (name) @name) @definition.function

(method_declaration
  name: (name) @name) @definition.method
