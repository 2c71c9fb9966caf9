; Tags patterns for JavaScript (also JSX), after ecmascript.scm.
; Added for code-intel: class fields holding a function (`handle = () => {}`) as
; @definition.method (TypeScript names this node differently: see typescript.scm).

(field_definition
  property: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method
