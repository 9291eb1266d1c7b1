// AASA's findings are spoken in the strict JSON parser's terms (a `Diagnostic` carries a
// `JSONPath` and a `SourceLocation`; a `ValidationResult` comes from a parsed `JSONValue`), and
// its messages quote through `TerminalText`: a module that validates AASA files reads those
// terms too, so importing AASA brings them.
@_exported public import SafeText
@_exported public import StrictJSON
