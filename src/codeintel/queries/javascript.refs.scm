; Reference patterns of JavaScript only, after ecmascript.refs.scm (see languages.rs):
; TypeScript wraps parameters in required_parameter and the superclass in extends_clause
; (typescript.refs.scm).

(formal_parameters (identifier) @ignore)

(class_heritage (identifier) @name @reference.inherit)
(class_heritage (member_expression property: (property_identifier) @name) @reference.inherit)
