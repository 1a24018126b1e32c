//! Rust source as a list of tokens, without comments: identifiers, string
//! literals (their text, for `#[path = "..."]`) and punctuation, `::` as
//! one token. Enough to follow `mod` and `use` declarations and paths; not
//! a Rust lexer (numbers split at their dots, shebangs are not special).

/// One token of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// An identifier or keyword (`r#` stripped from raw identifiers).
    Ident(String),
    /// A string literal's text, escapes left as written.
    Str(String),
    /// Punctuation: `::` or a single character.
    Punct(&'static str),
}

/// The tokens of `source`, comments, character literals and lifetimes
/// dropped.
pub fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut lexer = Lexer {
        chars,
        at: 0,
        out: Vec::new(),
    };
    lexer.run();
    lexer.out
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    out: Vec<Token>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                '/' if self.peek(1) == Some('/') => self.line_comment(),
                '/' if self.peek(1) == Some('*') => self.block_comment(),
                '"' => {
                    self.at += 1;
                    self.quoted();
                }
                '\'' => self.quote_or_lifetime(),
                c if c == '_' || c.is_alphabetic() => self.word(),
                c if c.is_ascii_digit() => self.number(),
                ':' if self.peek(1) == Some(':') => {
                    self.at += 2;
                    self.out.push(Token::Punct("::"));
                }
                c if c.is_whitespace() => self.at += 1,
                c => {
                    self.at += 1;
                    self.out.push(Token::Punct(punct(c)));
                }
            }
        }
    }

    fn line_comment(&mut self) {
        while let Some(c) = self.peek(0) {
            if c == '\n' {
                break;
            }
            self.at += 1;
        }
    }

    /// A block comment, nested ones included.
    fn block_comment(&mut self) {
        self.at += 2;
        let mut depth = 1;
        while depth > 0 && self.at < self.chars.len() {
            if self.peek(0) == Some('/') && self.peek(1) == Some('*') {
                depth += 1;
                self.at += 2;
            } else if self.peek(0) == Some('*') && self.peek(1) == Some('/') {
                depth -= 1;
                self.at += 2;
            } else {
                self.at += 1;
            }
        }
    }

    /// The rest of a `"..."` string after its opening quote.
    fn quoted(&mut self) {
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                '\\' => {
                    text.push(c);
                    if let Some(next) = self.peek(0) {
                        text.push(next);
                        self.at += 1;
                    }
                }
                '"' => break,
                c => text.push(c),
            }
        }
        self.out.push(Token::Str(text));
    }

    /// The rest of a raw string after its `r`: `#`s, quote, text, quote, `#`s.
    fn raw(&mut self) {
        let mut hashes = 0;
        while self.peek(0) == Some('#') {
            hashes += 1;
            self.at += 1;
        }
        self.at += 1; // the opening quote
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            let closes = c == '"' && (1..=hashes).all(|i| self.peek(i) == Some('#'));
            if closes {
                self.at += 1 + hashes;
                break;
            }
            text.push(c);
            self.at += 1;
        }
        self.out.push(Token::Str(text));
    }

    /// `'x'`, `'\n'` (a character, dropped) or `'a` (a lifetime, dropped).
    fn quote_or_lifetime(&mut self) {
        self.at += 1;
        if self.peek(0) == Some('\\') {
            self.at += 2;
            while let Some(c) = self.peek(0) {
                self.at += 1;
                if c == '\'' {
                    break;
                }
            }
        } else if self.peek(1) == Some('\'') {
            self.at += 2;
        } else {
            while self.peek(0).is_some_and(is_ident_char) {
                self.at += 1;
            }
        }
    }

    /// An identifier, or the prefix of a raw, byte or C string.
    fn word(&mut self) {
        let start = self.at;
        while self.peek(0).is_some_and(is_ident_char) {
            self.at += 1;
        }
        let word: String = self.chars[start..self.at].iter().collect();
        let next = self.peek(0);
        match (word.as_str(), next) {
            ("r" | "br" | "cr", Some('"' | '#')) if self.raw_follows() => self.raw(),
            ("b" | "c", Some('"')) => {
                self.at += 1;
                self.quoted();
            }
            ("b", Some('\'')) => self.quote_or_lifetime(),
            ("r", Some('#')) => {
                self.at += 1;
                let start = self.at;
                while self.peek(0).is_some_and(is_ident_char) {
                    self.at += 1;
                }
                let name = self.chars[start..self.at].iter().collect();
                self.out.push(Token::Ident(name));
            }
            _ => self.out.push(Token::Ident(word)),
        }
    }

    /// Whether `#`s then a quote follow: a raw string, not `r#ident`.
    fn raw_follows(&self) -> bool {
        let mut i = 0;
        while self.peek(i) == Some('#') {
            i += 1;
        }
        self.peek(i) == Some('"')
    }

    fn number(&mut self) {
        while self.peek(0).is_some_and(is_ident_char) {
            self.at += 1;
        }
    }
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The token for one punctuation character (a static string, so that
/// tokens compare without allocating).
fn punct(c: char) -> &'static str {
    const ALL: &str = "{}()[];,*#=!<>.&|+-/%^@?$:~";
    match ALL.find(c) {
        Some(i) => &ALL[i..i + 1],
        None => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<String> {
        tokens(source)
            .into_iter()
            .filter_map(|t| match t {
                Token::Ident(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_and_characters_hide_their_words() {
        let source = r###"
            // use crate::h1;
            /* crate::h2 /* nested crate::h3 */ still crate::h4 */
            let s = "crate::h5 \" crate::h6";
            let r = r#"crate::h7 "quoted" "#;
            let b = b"crate::h8";
            let c = '"'; let d = '\''; fn f<'a>(x: &'a u8) {}
            real
        "###;
        let words = idents(source);
        for hidden in ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"] {
            assert!(
                !words.contains(&hidden.to_string()),
                "{hidden} in {words:?}"
            );
        }
        assert!(words.contains(&"real".to_string()));
        assert!(tokens(source).contains(&Token::Str("crate::h7 \"quoted\" ".into())));
    }

    #[test]
    fn double_colon_is_one_token() {
        assert_eq!(
            tokens("crate::a"),
            vec![
                Token::Ident("crate".into()),
                Token::Punct("::"),
                Token::Ident("a".into())
            ]
        );
    }
}
