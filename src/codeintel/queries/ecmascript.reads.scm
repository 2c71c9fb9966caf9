; The catch-all reference patterns of JavaScript, TypeScript and TSX, last (see languages.rs):
; any other use of a name is a read (an argument, an assignment's value, a property read).

(member_expression property: (property_identifier) @name) @reference.read
(identifier) @name @reference.read
