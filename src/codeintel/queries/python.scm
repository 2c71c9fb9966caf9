; Tags query for Python.
; Origin: tree-sitter-python 0.25.0, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - added: functions defined directly in a class body (plain or decorated) are
;   @definition.method (listed first, so they win over @definition.function); for a
;   decorated method the tagged node is the function_definition, without decorators.

(class_definition
  body: (block
    [
      (function_definition
        name: (identifier) @name) @definition.method
      (decorated_definition
        definition: (function_definition
          name: (identifier) @name) @definition.method)
    ]))

(module (expression_statement (assignment left: (identifier) @name) @definition.constant))

(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function

(call
  function: [
      (identifier) @name
      (attribute
        attribute: (identifier) @name)
  ]) @reference.call
