//! Tokens of KCL source, with indentation as INDENT/DEDENT tokens.
