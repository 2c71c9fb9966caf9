; Tags query for Python.
; Origin: tree-sitter-python 0.25.0, queries/tags.scm (MIT licence, see that crate).
; Changes for code-intel:
; - added: class attributes (assignments directly in a class body) as @definition.field;
; - added: functions defined directly in a class body (plain or decorated) are
;   @definition.method (listed first, so they win over @definition.function);
; - a decorated function or class is tagged on its decorated_definition node, so its
;   range starts at the first decorator (a line of a decorator belongs to what it
;   decorates). Those patterns come before the plain ones: tree-sitter-tags keeps one tag
;   per name, from the earliest pattern.

(class_definition
  body: (block
    [
      (decorated_definition
        definition: (function_definition
          name: (identifier) @name)) @definition.method
      (function_definition
        name: (identifier) @name) @definition.method
    ]))

(module (expression_statement (assignment left: (identifier) @name) @definition.constant))

; module-level assignments inside `if`, `try` and their `else`/`except`/`finally`
; (added): `try: import x` / `except ImportError: ArrayField = None` defines the name
(module
  [
    (if_statement
      [
        consequence: (block (expression_statement (assignment left: (identifier) @name) @definition.constant))
        alternative: (else_clause body: (block (expression_statement (assignment left: (identifier) @name) @definition.constant)))
        alternative: (elif_clause consequence: (block (expression_statement (assignment left: (identifier) @name) @definition.constant)))
      ])
    (try_statement
      [
        body: (block (expression_statement (assignment left: (identifier) @name) @definition.constant))
        (except_clause (block (expression_statement (assignment left: (identifier) @name) @definition.constant)))
        (else_clause body: (block (expression_statement (assignment left: (identifier) @name) @definition.constant)))
        (finally_clause (block (expression_statement (assignment left: (identifier) @name) @definition.constant)))
      ])
  ])

; class attributes (added): `name = models.CharField(...)`, `pk = property(...)`,
; `limit: int = 3`, as fields of the class
(class_definition
  body: (block
    (expression_statement
      (assignment left: (identifier) @name) @definition.field)))

(decorated_definition
  definition: (class_definition
    name: (identifier) @name)) @definition.class

(class_definition
  name: (identifier) @name) @definition.class

(decorated_definition
  definition: (function_definition
    name: (identifier) @name)) @definition.function

(function_definition
  name: (identifier) @name) @definition.function
