//! The bytes on a TCP connection, encoded and decoded without I/O.
//!
//! A connection opens with a [`Hello`] each way (magic, protocol version,
//! job token, clock identity, rank, job size, the sender's listening
//! address, host name and switch). Rank 0 answers every registration with
//! the [`Table`] of all ranks' addresses, hosts, switches and clocks. After that the connection carries frames: a fixed
//! 44-byte [`Header`] and `len` payload bytes. Everything is little-endian.
//!
//! Decoding never trusts a length: strings are capped at
//! [`MAX_TEXT`] bytes and a frame's length is compared with the configured
//! maximum by the caller before a byte of it is allocated.

use std::fmt;

use crate::ids::CallSig;
use crate::ids::Collective;
use crate::transport::Tag;

/// The first bytes of every hello: "ACOL".
pub const HELLO_MAGIC: [u8; 4] = *b"ACOL";
/// The first bytes of every frame header.
pub const FRAME_MAGIC: [u8; 2] = *b"AC";
/// The protocol version; peers of another version are refused (3: hellos
/// and tables carry the switch; 4: frames carry the communicator's context).
pub const VERSION: u8 = 4;
/// Bytes of a frame header.
pub const HEADER_LEN: usize = 44;
/// The longest address, host name or switch a hello or table may carry.
pub const MAX_TEXT: usize = 255;
/// Bytes of the fixed part of a hello (before its three strings).
pub const HELLO_FIXED: usize = 4 + 1 + 16 + 16 + 4 + 4 + 2 + 2 + 2;

const KIND_COLL: u8 = 0;
const KIND_USER: u8 = 1;

/// A random secret shared by the ranks of one job.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Token(pub [u8; 16]);

impl Token {
    /// A fresh token from the operating system's random source.
    pub fn random() -> std::io::Result<Token> {
        let mut bytes = [0u8; 16];
        rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())?;
        Ok(Token(bytes))
    }

    /// Parses the 32 hex digits that [`Token`]'s `Display` writes.
    pub fn parse(text: &str) -> Result<Token, String> {
        let text = text.trim();
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("a job token is 32 hex digits".into());
        }
        let mut bytes = [0u8; 16];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| "a job token is 32 hex digits".to_string())?;
        }
        Ok(Token(bytes))
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Token {
    /// Never prints the secret itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// What each side of a connection says first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The job's token.
    pub token: Token,
    /// The sender's clock identity ([`crate::clock::clock_id`]).
    pub clock: [u8; 16],
    /// The sender's rank.
    pub rank: u32,
    /// The job's size as the sender knows it.
    pub size: u32,
    /// Where the sender listens (`ip:port`).
    pub addr: String,
    /// The sender's host name.
    pub host: String,
    /// The path of the sender's switch; empty when not known.
    pub switch: String,
}

impl Hello {
    /// The hello's bytes; fails on a string longer than [`MAX_TEXT`].
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        check_text("address", &self.addr)?;
        check_text("host name", &self.host)?;
        check_text("switch", &self.switch)?;
        let strings = self.addr.len() + self.host.len() + self.switch.len();
        let mut out = Vec::with_capacity(HELLO_FIXED + strings);
        out.extend_from_slice(&HELLO_MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.token.0);
        out.extend_from_slice(&self.clock);
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&(self.addr.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.host.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.switch.len() as u16).to_le_bytes());
        out.extend_from_slice(self.addr.as_bytes());
        out.extend_from_slice(self.host.as_bytes());
        out.extend_from_slice(self.switch.as_bytes());
        Ok(out)
    }
}

/// The fixed part of a hello, read before its strings: says how long they
/// are, after checking magic and version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelloFixed {
    /// The job's token.
    pub token: Token,
    /// The sender's clock identity.
    pub clock: [u8; 16],
    /// The sender's rank.
    pub rank: u32,
    /// The job's size as the sender knows it.
    pub size: u32,
    /// Bytes of the address that follows.
    pub addr_len: usize,
    /// Bytes of the host name that follows it.
    pub host_len: usize,
    /// Bytes of the switch that follows the host name.
    pub switch_len: usize,
}

impl HelloFixed {
    /// Bytes of the strings that follow the fixed part.
    pub fn rest_len(&self) -> usize {
        self.addr_len + self.host_len + self.switch_len
    }
}

/// Decodes the fixed part of a hello.
pub fn decode_hello_fixed(b: &[u8; HELLO_FIXED]) -> Result<HelloFixed, String> {
    if b[0..4] != HELLO_MAGIC {
        return Err(format!(
            "not an autocoll peer (bad magic {:02x?}, expected \"ACOL\")",
            &b[0..4]
        ));
    }
    if b[4] != VERSION {
        return Err(format!(
            "protocol version {} (this build speaks version {VERSION})",
            b[4]
        ));
    }
    let mut token = [0u8; 16];
    token.copy_from_slice(&b[5..21]);
    let mut clock = [0u8; 16];
    clock.copy_from_slice(&b[21..37]);
    let fixed = HelloFixed {
        token: Token(token),
        clock,
        rank: u32_at(b, 37),
        size: u32_at(b, 41),
        addr_len: u16::from_le_bytes([b[45], b[46]]) as usize,
        host_len: u16::from_le_bytes([b[47], b[48]]) as usize,
        switch_len: u16::from_le_bytes([b[49], b[50]]) as usize,
    };
    if [fixed.addr_len, fixed.host_len, fixed.switch_len]
        .iter()
        .any(|&len| len > MAX_TEXT)
    {
        return Err(format!("hello strings longer than {MAX_TEXT} bytes"));
    }
    Ok(fixed)
}

/// Completes a hello from its fixed part and the string bytes after it.
pub fn decode_hello_rest(fixed: HelloFixed, rest: &[u8]) -> Result<Hello, String> {
    if rest.len() != fixed.rest_len() {
        return Err("hello strings of the wrong length".into());
    }
    let (addr, rest) = rest.split_at(fixed.addr_len);
    let (host, switch) = rest.split_at(fixed.host_len);
    Ok(Hello {
        token: fixed.token,
        clock: fixed.clock,
        rank: fixed.rank,
        size: fixed.size,
        addr: text(addr, "address")?,
        host: text(host, "host name")?,
        switch: text(switch, "switch")?,
    })
}

/// One rank's line of the [`Table`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Where the rank listens (`ip:port`).
    pub addr: String,
    /// Its host name.
    pub host: String,
    /// Its switch's path; empty when not known.
    pub switch: String,
    /// Its clock identity.
    pub clock: [u8; 16],
}

/// Every rank's listening address, host name, switch and clock identity,
/// sent by rank 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// One entry per rank, by rank.
    pub ranks: Vec<Entry>,
}

impl Table {
    /// The table's bytes: a count, then per rank three length-prefixed
    /// strings (address, host, switch) and the 16 bytes of the clock
    /// identity.
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.ranks.len() as u32).to_le_bytes());
        for entry in &self.ranks {
            for s in [&entry.addr, &entry.host, &entry.switch] {
                check_text("table entry", s)?;
                out.extend_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            out.extend_from_slice(&entry.clock);
        }
        Ok(out)
    }
}

fn check_text(what: &str, s: &str) -> Result<(), String> {
    if s.len() > MAX_TEXT {
        return Err(format!("{what} `{s}` is longer than {MAX_TEXT} bytes"));
    }
    Ok(())
}

fn text(bytes: &[u8], what: &str) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// A frame header: who sent the payload, its tag and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The sending rank.
    pub src: u32,
    /// The message's tag.
    pub tag: Tag,
    /// Payload bytes that follow.
    pub len: u64,
}

/// Layout: `magic[2] version kind src:u32 | seq-or-user-tag:u64 | bytes:u64 |
/// root:u32 op phase 0 0 | len:u64 | ctx:u32`.
impl Header {
    /// The header's 44 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&FRAME_MAGIC);
        b[2] = VERSION;
        b[4..8].copy_from_slice(&self.src.to_le_bytes());
        match self.tag {
            Tag::Coll { call, phase, .. } => {
                b[3] = KIND_COLL;
                b[8..16].copy_from_slice(&call.seq.to_le_bytes());
                b[16..24].copy_from_slice(&call.bytes.to_le_bytes());
                b[24..28].copy_from_slice(&call.root.to_le_bytes());
                b[28] = op_code(call.op);
                b[29] = phase;
            }
            Tag::User { tag, .. } => {
                b[3] = KIND_USER;
                b[8..16].copy_from_slice(&tag.to_le_bytes());
            }
        }
        b[32..40].copy_from_slice(&self.len.to_le_bytes());
        b[40..44].copy_from_slice(&self.tag.ctx().to_le_bytes());
        b
    }

    /// Decodes a header, saying what is wrong with a bad one.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, String> {
        if b[0..2] != FRAME_MAGIC {
            return Err(format!(
                "frame with bad magic {:02x?} (expected \"AC\")",
                &b[0..2]
            ));
        }
        if b[2] != VERSION {
            return Err(format!(
                "frame of protocol version {} (this build speaks version {VERSION})",
                b[2]
            ));
        }
        if b[30] != 0 || b[31] != 0 {
            return Err("frame header with non-zero reserved bytes".into());
        }
        let ctx = u32_at(b, 40);
        let tag = match b[3] {
            KIND_COLL => Tag::Coll {
                call: CallSig {
                    seq: u64_at(b, 8),
                    op: op_from_code(b[28])?,
                    root: u32_at(b, 24),
                    bytes: u64_at(b, 16),
                },
                phase: b[29],
                ctx,
            },
            KIND_USER if b[16..30].iter().all(|&x| x == 0) => Tag::User {
                tag: u64_at(b, 8),
                ctx,
            },
            KIND_USER => return Err("user frame with non-zero collective fields".into()),
            other => return Err(format!("frame of unknown kind {other}")),
        };
        Ok(Header {
            src: u32_at(b, 4),
            tag,
            len: u64_at(b, 32),
        })
    }
}

fn op_code(op: Collective) -> u8 {
    Collective::ALL
        .iter()
        .position(|&o| o == op)
        .expect("every collective is in ALL") as u8
}

fn op_from_code(code: u8) -> Result<Collective, String> {
    Collective::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| format!("frame names unknown collective {code}"))
}

/// Decodes a table from a reader of exact byte counts, checking `size`.
pub fn read_table(
    mut read: impl FnMut(&mut [u8]) -> std::io::Result<()>,
    size: usize,
) -> Result<Table, String> {
    let io = |e: std::io::Error| format!("reading the address table: {e}");
    let mut count = [0u8; 4];
    read(&mut count).map_err(io)?;
    let count = u32::from_le_bytes(count) as usize;
    if count != size {
        return Err(format!(
            "address table for {count} ranks, this job has {size}"
        ));
    }
    let mut ranks = Vec::with_capacity(size);
    for _ in 0..size {
        let mut strings = [String::new(), String::new(), String::new()];
        for s in &mut strings {
            let mut len = [0u8; 2];
            read(&mut len).map_err(io)?;
            let len = u16::from_le_bytes(len) as usize;
            if len > MAX_TEXT {
                return Err(format!("address table entry longer than {MAX_TEXT} bytes"));
            }
            let mut buf = vec![0u8; len];
            read(&mut buf).map_err(io)?;
            *s = text(&buf, "address table entry")?;
        }
        let [addr, host, switch] = strings;
        let mut clock = [0u8; 16];
        read(&mut clock).map_err(io)?;
        ranks.push(Entry {
            addr,
            host,
            switch,
            clock,
        });
    }
    Ok(Table { ranks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn coll_tag() -> Tag {
        Tag::Coll {
            call: CallSig {
                seq: 7,
                op: Collective::Allgather,
                root: 3,
                bytes: 65539,
            },
            phase: 2,
            ctx: 0x0102_0304,
        }
    }

    #[test]
    fn headers_round_trip_both_tags() {
        for tag in [coll_tag(), Tag::user(0xC4EC), Tag::user(1).in_ctx(9)] {
            let h = Header {
                src: 5,
                tag,
                len: 1 << 33,
            };
            assert_eq!(Header::decode(&h.encode()), Ok(h));
        }
    }

    #[test]
    fn bad_headers_say_what_is_wrong() {
        let good = Header {
            src: 1,
            tag: coll_tag(),
            len: 4,
        }
        .encode();
        let mut b = good;
        b[0] = b'X';
        assert!(Header::decode(&b).unwrap_err().contains("bad magic"));
        let mut b = good;
        b[2] = 9;
        assert!(Header::decode(&b).unwrap_err().contains("version 9"));
        let mut b = good;
        let unknown = Collective::ALL.len() as u8;
        b[28] = unknown;
        assert!(Header::decode(&b)
            .unwrap_err()
            .contains(&format!("unknown collective {unknown}")));
        let mut b = good;
        b[3] = 4;
        assert!(Header::decode(&b).unwrap_err().contains("unknown kind 4"));
    }

    #[test]
    fn hello_round_trips_and_refuses_long_strings() {
        let hello = Hello {
            token: Token([9; 16]),
            clock: [3; 16],
            rank: 3,
            size: 64,
            addr: "10.0.0.2:40001".into(),
            host: "node2".into(),
            switch: "sw0/sw1".into(),
        };
        let bytes = hello.encode().unwrap();
        let fixed: [u8; HELLO_FIXED] = bytes[..HELLO_FIXED].try_into().unwrap();
        let fixed = decode_hello_fixed(&fixed).unwrap();
        assert_eq!(
            decode_hello_rest(fixed, &bytes[HELLO_FIXED..]),
            Ok(hello.clone())
        );
        let long = Hello {
            host: "x".repeat(MAX_TEXT + 1),
            ..hello.clone()
        };
        assert!(long.encode().is_err());
        let long = Hello {
            switch: "s".repeat(MAX_TEXT + 1),
            ..hello
        };
        assert!(long.encode().is_err());
    }

    #[test]
    fn tables_round_trip_and_check_the_size() {
        let entry = |port: u16, host: &str, switch: &str, clock: u8| Entry {
            addr: format!("127.0.0.1:{port}"),
            host: host.into(),
            switch: switch.into(),
            clock: [clock; 16],
        };
        let table = Table {
            ranks: vec![entry(1, "a", "sw0", 1), entry(2, "b", "", 2)],
        };
        let bytes = table.encode().unwrap();
        let reader = |bytes: &[u8]| {
            let mut at = 0;
            let bytes = bytes.to_vec();
            move |buf: &mut [u8]| {
                let end = at + buf.len();
                let src = bytes
                    .get(at..end)
                    .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(src);
                at = end;
                Ok(())
            }
        };
        assert_eq!(read_table(reader(&bytes), 2), Ok(table));
        assert!(read_table(reader(&bytes), 3).unwrap_err().contains("3"));
    }

    #[test]
    fn tokens_print_and_parse() {
        let t = Token::random().unwrap();
        assert_eq!(Token::parse(&t.to_string()), Ok(t));
        assert!(Token::parse("abc").is_err());
        assert_eq!(format!("{t:?}"), "Token(..)");
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), HELLO_FIXED + 64)) {
            let b: [u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().unwrap();
            if let Ok(h) = Header::decode(&b) {
                prop_assert_eq!(h.encode(), b);
            }
            let f: [u8; HELLO_FIXED] = bytes[..HELLO_FIXED].try_into().unwrap();
            if let Ok(fixed) = decode_hello_fixed(&f) {
                let _ = decode_hello_rest(fixed, &bytes[HELLO_FIXED..]);
            }
        }

        #[test]
        fn decoding_arbitrary_tables_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), size in 0usize..4) {
            let mut at = 0;
            let _ = read_table(|buf: &mut [u8]| {
                let end = at + buf.len();
                let src = bytes.get(at..end).ok_or(std::io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(src);
                at = end;
                Ok(())
            }, size);
        }
    }
}
