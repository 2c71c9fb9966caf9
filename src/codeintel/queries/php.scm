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

(class_interface_clause [(name) (qualified_name)] @name) @reference.implementation

(property_declaration
  (property_element (variable_name (name) @name))) @definition.field

(const_declaration
  (const_element (name) @name)) @definition.constant

(function_definition
  name: (name) @name) @definition.function

(method_declaration
  name: (name) @name) @definition.method

(object_creation_expression
  [
    (name) @name
    (qualified_name (name) @name)
    (variable_name (name) @name)
  ]) @reference.class

(function_call_expression
  function: [
    (name) @name
    (qualified_name (name) @name)
    (variable_name (name)) @name
  ]) @reference.call

(scoped_call_expression
  name: (name) @name) @reference.call

(member_call_expression
  name: (name) @name) @reference.call

(nullsafe_member_call_expression
  name: (name) @name) @reference.call
