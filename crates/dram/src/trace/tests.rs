//! Tests across the trace formats: detection, files, streaming, and fuzzing of every reader.
use super::*;
use crate::request::{Op, Request};
use proptest::prelude::*;
use std::io::Read;

const FORMATS: [TraceFormat; 4] = [
    TraceFormat::Auto,
    TraceFormat::Native,
    TraceFormat::Ramulator,
    TraceFormat::Dramsim3,
];

#[test]
fn detects_formats() {
    assert_eq!(detect_format("LD 0x40"), Some(TraceFormat::Ramulator));
    assert_eq!(detect_format("  st 12 # x"), Some(TraceFormat::Ramulator));
    assert_eq!(detect_format("R 0x40"), Some(TraceFormat::Native));
    assert_eq!(detect_format("@3 W 0x40"), Some(TraceFormat::Native));
    assert_eq!(detect_format("copy 0 4096 4K"), Some(TraceFormat::Native));
    assert_eq!(detect_format("INIT 0 4K 0"), Some(TraceFormat::Native));
    assert_eq!(detect_format("0x40 READ 12"), Some(TraceFormat::Dramsim3));
    assert_eq!(
        detect_format("abc P_MEM_WR 12"),
        Some(TraceFormat::Dramsim3)
    );
    assert_eq!(detect_format("0x40 READ"), None);
    assert_eq!(detect_format("0x40 READ 1 2"), None);
    assert_eq!(detect_format("# R 0x40"), None);
    assert_eq!(detect_format(""), None);
    assert_eq!(detect_format("hello world"), None);
}

#[test]
fn format_names() {
    for name in TraceFormat::NAMES {
        let f: Result<TraceFormat, _> = name.parse();
        assert_eq!(f.map(|f| f.name()), Ok(*name));
    }
    assert_eq!(
        "Ramulator2".parse::<TraceFormat>(),
        Ok(TraceFormat::Ramulator)
    );
    assert_eq!(
        "gem5"
            .parse::<TraceFormat>()
            .err()
            .map(|e| e.to_string())
            .as_deref(),
        Some("unknown trace format 'gem5' (known: auto, native, ramulator, dramsim3)")
    );
}

#[test]
fn auto_detection_skips_comments_and_reports_the_line() {
    let r = from_reader(
        "# made by hand\n\n   \nLD 0x40\n".as_bytes(),
        "a",
        TraceFormat::Auto,
    );
    assert_eq!(
        r.as_ref().map(|r| r.format()).ok(),
        Some(TraceFormat::Ramulator)
    );
    let items: Result<Vec<_>, _> = r.map(|r| r.collect::<Result<Vec<_>, _>>()).and_then(|x| x);
    assert_eq!(
        items,
        Ok(vec![TraceItem::Req(Request {
            addr: 0x40,
            op: Op::Read,
            arrival: None
        })])
    );

    let e = from_reader("# c\n\nfoo bar\n".as_bytes(), "a.txt", TraceFormat::Auto)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some(
            "a.txt:3: cannot tell the trace format from 'foo bar': expected a native line ('R 0x40', 'COPY ...', \
             '@10 W 0x80'), a Ramulator 2 line ('LD 0x40') or a DRAMsim3 line ('0x40 READ 10')"
        )
    );
    let empty = from_reader("# nothing\n".as_bytes(), "e", TraceFormat::Auto);
    assert_eq!(empty.map(|r| r.count()).ok(), Some(0));
}

#[test]
fn a_format_given_explicitly_is_not_second_guessed() {
    let e = from_reader("LD 0x40\n".as_bytes(), "n", TraceFormat::Native)
        .map(|mut r| r.next())
        .ok()
        .flatten()
        .and_then(|x| x.err())
        .map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.starts_with("n:1: unknown operation 'LD'")));
}

#[test]
fn bad_bytes_and_long_lines_are_line_errors() {
    let mut text = b"R 0\nR 0x\xff\xfe\n".to_vec();
    let e = from_reader(text.as_slice(), "b", TraceFormat::Native)
        .map(|r| r.collect::<Result<Vec<_>, _>>());
    assert_eq!(
        e.ok()
            .and_then(|r| r.err())
            .map(|e| e.to_string())
            .as_deref(),
        Some("b:2: not valid UTF-8 text (bad byte at column 5)")
    );
    text = b"R 0\n".to_vec();
    text.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES + 10));
    text.extend(b"R 0\nR 0\n");
    let r: Vec<_> = from_reader(text.as_slice(), "b", TraceFormat::Native)
        .map(|r| r.collect())
        .unwrap_or_default();
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[1].as_ref().err().map(|e| e.to_string()).as_deref(),
        Some("b:2: line is longer than 4096 bytes")
    );
    // A line of exactly the maximum length, ended by CRLF, is fine.
    let mut text = format!("R 0{}", " ".repeat(MAX_LINE_BYTES - 3)).into_bytes();
    text.extend(b"\r\nW 64");
    let r: Result<Vec<_>, _> =
        from_reader(text.as_slice(), "b", TraceFormat::Native).and_then(|r| r.collect());
    assert_eq!(r.map(|v| v.len()), Ok(2));
}

#[test]
fn open_trace_reads_files_and_names_them() {
    let dir = std::env::temp_dir().join(format!("movelab-trace-test-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let good = dir.join("good.trace");
    let bad = dir.join("bad.trace");
    let written = std::fs::write(&good, "0x40 READ 1\n0x80 WRITE 2\n")
        .and_then(|_| std::fs::write(&bad, "R 0\nR\n"));
    assert!(written.is_ok());

    let items: Result<Vec<_>, _> = open_trace(&good, TraceFormat::Auto).and_then(|r| r.collect());
    assert_eq!(items.map(|v| v.len()), Ok(2));

    let e: Result<Vec<_>, _> = open_trace(&bad, TraceFormat::Auto).and_then(|r| r.collect());
    assert_eq!(
        e.err().map(|e| e.to_string()),
        Some(format!(
            "{}:2: R takes ADDR, got 0 argument(s)",
            bad.display()
        ))
    );

    let missing = dir.join("missing.trace");
    let e = open_trace(&missing, TraceFormat::Auto).err();
    assert!(
        matches!(e, Some(TraceError::Io { ref path, .. }) if *path == missing.display().to_string())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An endless trace text made on the fly: reading a prefix of it only works if the reader streams.
struct Endless {
    n: u64,
    line: Vec<u8>,
    at: usize,
}

impl Read for Endless {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.line.len() {
            self.line.clear();
            let op = if self.n % 5 == 4 { "ST" } else { "LD" };
            self.line
                .extend(format!("{op} 0x{:x}\n", self.n * 64).bytes());
            self.at = 0;
            self.n += 1;
        }
        let k = out.len().min(self.line.len() - self.at);
        out[..k].copy_from_slice(&self.line[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

#[test]
fn readers_stream() {
    let src = std::io::BufReader::new(Endless {
        n: 0,
        line: Vec::new(),
        at: 0,
    });
    let reader = from_reader(src, "endless", TraceFormat::Auto);
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let mut writes = 0u64;
    let n = 1_000_000u64;
    for (i, item) in reader.by_ref().take(n as usize).enumerate() {
        match item {
            Ok(TraceItem::Req(r)) => {
                assert_eq!(r.addr, i as u64 * 64);
                writes += u64::from(r.op == Op::Write);
            }
            other => panic!("item {i}: {other:?}"),
        }
    }
    assert_eq!(writes, n / 5);
    assert_eq!(reader.line(), n as usize);
    // The one line buffer stays small: nothing accumulates as lines go by.
    assert!(reader.buf.capacity() <= MAX_LINE_BYTES + 2);
}

#[test]
fn sizes() {
    assert_eq!(parse_size("4K"), Ok(4096));
    assert_eq!(parse_size("4kib"), Ok(4096));
    assert_eq!(parse_size("2MB"), Ok(2 << 20));
    assert_eq!(parse_size("0x10"), Ok(16));
    assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    assert!(parse_size("0x10K").is_err());
    assert!(parse_size("K").is_err());
    assert!(parse_size("-4K").is_err());
    assert!(parse_size("+4").is_err());
    assert_eq!(
        parse_u64("0x"),
        Err("'0x' is not a hexadecimal number".to_string())
    );
    assert_eq!(shorten(&"é".repeat(30)).len(), 43);
}

/// Checks the reader contract on one input: no panic, errors name this source and a line that
/// exists, and nothing follows an error.
fn check_contract(bytes: &[u8], format: TraceFormat) -> Result<(), TestCaseError> {
    let lines = bytes.split(|b| *b == b'\n').count();
    let check_err = |e: &TraceError| -> Result<(), TestCaseError> {
        match e {
            TraceError::Line {
                source_name,
                line,
                what,
            } => {
                prop_assert_eq!(source_name.as_str(), "fuzz");
                prop_assert!(*line >= 1 && *line <= lines, "line {} of {}", line, lines);
                prop_assert!(!what.is_empty());
            }
            other => prop_assert!(false, "not a line error: {other:?}"),
        }
        Ok(())
    };
    match from_reader(bytes, "fuzz", format) {
        Err(e) => check_err(&e)?,
        Ok(mut r) => {
            let mut errors = 0;
            for item in r.by_ref() {
                if let Err(e) = item {
                    check_err(&e)?;
                    errors += 1;
                }
            }
            prop_assert!(errors <= 1);
            prop_assert!(r.next().is_none());
        }
    }
    Ok(())
}

/// Lines made of pieces of every format, so the fuzzer gets past the first token.
fn arb_line() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("R".to_string()),
        Just("W".to_string()),
        Just("COPY".to_string()),
        Just("INIT".to_string()),
        Just("LD".to_string()),
        Just("ST".to_string()),
        Just("READ".to_string()),
        Just("WRITE".to_string()),
        Just("P_MEM_WR".to_string()),
        Just("#".to_string()),
        Just("0x".to_string()),
        Just("4K".to_string()),
        Just("1T".to_string()),
        Just("18446744073709551615".to_string()),
        Just("0xffffffffffffffff".to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| format!("0x{n:x}")),
        (0u64..300).prop_map(|n| n.to_string()),
        (0u64..1000).prop_map(|n| format!("@{n}")),
        "[ -~]{0,6}",
        "\\PC{0,4}",
    ];
    (
        proptest::collection::vec(token, 0..6),
        prop_oneof![Just(" "), Just("\t"), Just("  ")],
    )
        .prop_map(|(tokens, sep)| tokens.join(sep))
}

proptest! {
    #[test]
    fn readers_never_panic_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        for f in FORMATS {
            check_contract(&bytes, f)?;
        }
    }

    #[test]
    fn readers_never_panic_on_lines(
        lines in proptest::collection::vec(arb_line(), 0..30),
        crlf in any::<bool>(),
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        for f in FORMATS {
            check_contract(text.as_bytes(), f)?;
        }
    }
}

#[test]
fn streams_are_send() {
    fn send<T: Send>(_: &T) {}
    let r = from_reader(
        std::io::Cursor::new(Vec::<u8>::new()),
        "s",
        TraceFormat::Auto,
    );
    if let Ok(r) = &r {
        send(r);
    }
    let boxed: Option<TraceStream> = r.ok().map(|r| Box::new(r) as TraceStream);
    assert!(boxed.is_some());
}

/// Line requests with optional, non-decreasing arrivals.
fn arb_requests() -> impl Strategy<Value = Vec<Request>> {
    proptest::collection::vec(
        (
            any::<u64>(),
            any::<bool>(),
            proptest::option::of(0u64..1000),
        ),
        0..50,
    )
    .prop_map(|raw| {
        let mut now = 0u64;
        raw.into_iter()
            .map(|(addr, w, step)| Request {
                addr,
                op: if w { Op::Write } else { Op::Read },
                arrival: step.map(|s| {
                    now += s;
                    now
                }),
            })
            .collect()
    })
}

fn read_back(bytes: &[u8]) -> Result<Vec<TraceItem>, TraceError> {
    from_reader(bytes, "rt", TraceFormat::Auto)?.collect()
}

proptest! {
    #[test]
    fn ramulator_round_trip(reqs in arb_requests()) {
        let items: Vec<TraceItem> = reqs.iter().map(|r| TraceItem::Req(*r)).collect();
        let mut out = Vec::new();
        prop_assert_eq!(write_ramulator(items, &mut out).ok(), Some(reqs.len() as u64));
        // The format has no timestamps: everything comes back with no arrival.
        let want: Vec<TraceItem> =
            reqs.iter().map(|r| TraceItem::Req(Request { arrival: None, ..*r })).collect();
        prop_assert_eq!(read_back(&out), Ok(want));
    }

    #[test]
    fn dramsim3_round_trip(reqs in arb_requests()) {
        let items: Vec<TraceItem> = reqs.iter().map(|r| TraceItem::Req(*r)).collect();
        // Items without an arrival get the cycle after the previous one; if that overtakes a
        // later explicit arrival, the writer must refuse.
        let mut last: Option<u64> = None;
        let mut in_order = true;
        let want: Vec<TraceItem> = reqs
            .iter()
            .map(|r| {
                let c = r.arrival.unwrap_or_else(|| last.map_or(0, |l| l + 1));
                in_order &= last.is_none_or(|l| c >= l);
                last = Some(c);
                TraceItem::Req(Request { arrival: Some(c), ..*r })
            })
            .collect();
        let mut out = Vec::new();
        let written = write_dramsim3(items, &mut out);
        if in_order {
            prop_assert_eq!(written.ok(), Some(reqs.len() as u64));
            prop_assert_eq!(read_back(&out), Ok(want));
        } else {
            prop_assert!(matches!(written, Err(TraceError::Invalid(_))));
        }
    }
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_line() {
    let plain = read_back(b"R 0x0\nW 0x40\n").unwrap();
    let marked = read_back(b"\xEF\xBB\xBFR 0x0\nW 0x40\n").unwrap();
    assert_eq!(marked, plain);
    // Only at the very start: elsewhere it is a bad line.
    assert!(read_back(b"R 0x0\n\xEF\xBB\xBFW 0x40\n").is_err());
}

/// A source that gives some whole lines, then fails once (as a Python iterable's exception does,
/// which the binding takes once), then ends.
struct FailsOnce {
    data: Vec<u8>,
    pos: usize,
    failed: bool,
}

impl Read for FailsOnce {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let b = self.fill_buf()?;
            let n = b.len().min(out.len());
            out[..n].copy_from_slice(&b[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FailsOnce {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos < self.data.len() {
            return Ok(&self.data[self.pos..]);
        }
        if !self.failed {
            self.failed = true;
            return Err(std::io::Error::other("the source failed"));
        }
        Ok(&[])
    }
    fn consume(&mut self, n: usize) {
        self.pos += n;
    }
}

#[test]
fn a_read_error_after_whole_lines_is_reported_not_taken_for_the_end() {
    for format in [TraceFormat::Native, TraceFormat::Ramulator] {
        let text = if format == TraceFormat::Native {
            "R 0x0\nR 0x40\n"
        } else {
            "LD 0x0\nLD 0x40\n"
        };
        let src = FailsOnce {
            data: text.as_bytes().to_vec(),
            pos: 0,
            failed: false,
        };
        let items: Vec<_> = TraceReader::new(src, "t", format).unwrap().collect();
        assert_eq!(items.len(), 3, "{format:?}: {items:?}");
        assert!(items[0].is_ok() && items[1].is_ok());
        let e = items[2].as_ref().unwrap_err().to_string();
        assert!(e.contains("the source failed"), "{format:?}: {e}");
    }
}

/// A Ramulator 2 line of the plain form (read in place from the reader's buffer) or of any other
/// form the general path reads (or refuses).
fn arb_ramulator_line() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|a| format!("LD 0x{a:x}")),
        any::<u64>().prop_map(|a| format!("ST 0x{a:X}")),
        (0u64..1 << 20).prop_map(|a| format!("LD 0x{a:x}")),
        Just("ld 0x40".to_string()),
        Just("LD  0x80".to_string()),
        Just("ST 0x40 # comment".to_string()),
        Just("# comment".to_string()),
        Just(String::new()),
        Just("LD 0x".to_string()),
        Just("LD 0x12345678901234567".to_string()),
        Just("XX 0x10".to_string()),
    ]
}

proptest! {
    /// Whatever the reader's buffer size (lines split across refills or not), the in-place path
    /// and the general path together read every line as the general parser alone does, and an
    /// error names the same line.
    #[test]
    fn ramulator_lines_read_in_place_match_the_general_parser(
        lines in proptest::collection::vec(arb_ramulator_line(), 1..40),
        crlf in any::<bool>(),
        cap in 1usize..48,
    ) {
        let text = format!("LD 0x0\n{}\n", lines.join(if crlf { "\r\n" } else { "\n" }));
        let mut expect = Vec::new();
        for (n, line) in text.lines().enumerate() {
            match ramulator::parse_line(line) {
                Ok(Some(item)) => expect.push(Ok(item)),
                Ok(None) => {}
                Err(_) => {
                    expect.push(Err(n + 1));
                    break;
                }
            }
        }
        let src = std::io::BufReader::with_capacity(cap, text.as_bytes());
        let got: Vec<Result<TraceItem, usize>> = TraceReader::new(src, "t", TraceFormat::Ramulator)
            .unwrap()
            .map(|r| {
                r.map_err(|e| match e {
                    TraceError::Line { line, .. } => line,
                    other => panic!("not a line error: {other:?}"),
                })
            })
            .collect();
        prop_assert_eq!(got, expect);
    }
}

/// A run error naming a trace item ("trace item 3: ...") is given the file and line of that item,
/// read again with the reader's own rules (comments and blank lines are not items); other
/// messages, and items past the file's end, stay as they were.
#[test]
fn run_errors_name_the_items_file_and_line() {
    let dir = std::env::temp_dir().join(format!("movelab-item-line-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.trace");
    std::fs::write(
        &p,
        "# header\nR 0x0\n\n  # note\nW 0x40\nINIT 0x0 4096 0 # third\n",
    )
    .unwrap();
    assert_eq!(line_of_item(&p, TraceFormat::Auto, 1), Some(2));
    assert_eq!(line_of_item(&p, TraceFormat::Native, 3), Some(6));
    assert_eq!(line_of_item(&p, TraceFormat::Auto, 4), None);
    let m = with_item_line("trace item 3: too big", &p, TraceFormat::Auto);
    assert_eq!(m, format!("{}:6: too big", p.display()));
    assert_eq!(
        with_item_line("trace item 9: x", &p, TraceFormat::Auto),
        "trace item 9: x"
    );
    assert_eq!(with_item_line("other", &p, TraceFormat::Auto), "other");
    std::fs::remove_dir_all(&dir).unwrap();
}
