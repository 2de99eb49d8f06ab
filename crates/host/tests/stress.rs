//! Randomised stress of the thread engine against a byte-exact reference model: two submitting
//! threads, thousands of operations of random sizes, alignments and overlaps (copies, in-buffer
//! memmoves, fills), batches, check/wait/wait_all mixes; then leaks and shutdown in flight.
use movelab_host::engine::live_records;
use movelab_host::{EngineConfig, Op, Runtime};
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

/// The leak checks count completion records process-wide: run these tests one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A small deterministic generator (xorshift64*), so that a failure can be replayed by seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// Mostly small sizes, sometimes large ones (to cross the split and streaming thresholds).
    fn size(&mut self, max: usize) -> usize {
        let cap = match self.below(10) {
            0..=5 => 300,
            6..=7 => 20_000,
            _ => max,
        };
        self.below(cap.min(max) + 1)
    }
}

/// What one op in a batch does to its window of the arena.
enum Kind {
    /// memmove inside the window: (src_off, dst_off, len)
    Within(usize, usize, usize),
    /// copy from the window's left part into its right part at an offset: (split, dst_off, len)
    Across(usize, usize, usize),
    Fill(u8),
}

fn apply_model(win: &mut [u8], k: &Kind) {
    match *k {
        Kind::Within(s, d, len) => win.copy_within(s..s + len, d),
        Kind::Across(split, d, len) => {
            let (l, r) = win.split_at_mut(split);
            r[d..d + len].copy_from_slice(&l[..len]);
        }
        Kind::Fill(v) => win.fill(v),
    }
}

/// One submitting thread: `batches` rounds of up to 24 concurrent ops on disjoint windows.
fn submitter(rt: &Runtime, seed: u64, batches: usize) -> usize {
    const ARENA: usize = 6 << 20;
    let mut rng = Rng(seed);
    let mut arena: Vec<u8> = (0..ARENA)
        .map(|i| (i as u64).wrapping_mul(seed) as u8)
        .collect();
    let mut model = arena.clone();
    let mut ops = 0;
    for round in 0..batches {
        // Cut the arena into disjoint windows at random points.
        let n = 1 + rng.below(24);
        let mut cuts: Vec<usize> = (0..n * 2).map(|_| rng.below(ARENA)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let windows: Vec<(usize, usize)> = cuts.chunks_exact(2).map(|c| (c[0], c[1])).collect();
        let kinds: Vec<Kind> = windows
            .iter()
            .map(|&(a, b)| {
                let w = b - a;
                match rng.below(3) {
                    0 => {
                        let len = rng.size(w);
                        Kind::Within(rng.below(w - len + 1), rng.below(w - len + 1), len)
                    }
                    1 => {
                        let split = rng.below(w + 1);
                        let len = rng.size(split.min(w - split));
                        Kind::Across(split, rng.below(w - split - len + 1), len)
                    }
                    _ => Kind::Fill(rng.next() as u8),
                }
            })
            .collect();
        for (&(a, b), k) in windows.iter().zip(&kinds) {
            apply_model(&mut model[a..b], k);
        }
        let mode = rng.below(4);
        let check_first = rng.below(2) == 0;
        rt.scope(|s| {
            // Hand out the disjoint windows as separate mutable borrows.
            let mut rest: &mut [u8] = &mut arena;
            let mut consumed = 0;
            let mut cookies = Vec::new();
            let mut batch = Vec::new();
            for (&(a, b), k) in windows.iter().zip(&kinds) {
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(a - consumed);
                let (win, tail) = tail.split_at_mut(b - a);
                rest = tail;
                consumed = b;
                let c = match *k {
                    Kind::Within(so, d, len) => s.icopy_within(win, so, d, len).unwrap(),
                    Kind::Across(split, d, len) => {
                        let (l, r) = win.split_at_mut(split);
                        if mode == 3 {
                            batch.push((&l[..len], &mut r[d..d + len]));
                            continue;
                        }
                        s.icopy(&l[..len], &mut r[d..d + len]).unwrap()
                    }
                    Kind::Fill(v) => s.ifill(win, v).unwrap(),
                };
                cookies.push(c);
            }
            if !batch.is_empty() {
                cookies.extend(s.icopy_batch(batch).unwrap());
            }
            match mode {
                0 => {
                    for c in cookies {
                        if check_first {
                            while !s.check(c).unwrap() {
                                std::thread::yield_now();
                            }
                        }
                        s.wait(c).unwrap();
                    }
                }
                1 => s.wait_all().unwrap(),
                _ => {} // the scope's end waits
            }
        });
        ops += windows.len();
        if arena != model {
            let at = arena.iter().zip(&model).position(|(a, b)| a != b).unwrap();
            panic!("seed {seed} round {round}: first wrong byte at {at}");
        }
    }
    ops
}

#[test]
fn two_submitters_many_random_ops_every_byte_checked() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = live_records();
    let cfg = EngineConfig {
        channels: 2,
        ring_capacity: 16, // small: exercises the full-ring back-pressure path
        split_threshold: 64 << 10,
        nt_threshold: 16 << 10,
        spin_us: 20,
        ..Default::default()
    };
    let rt = Arc::new(Runtime::new("thread", &cfg).unwrap());
    let handles: Vec<_> = [0x1234_5678_9abc_def1u64, 0x0fed_cba9_8765_4321]
        .into_iter()
        .map(|seed| {
            let rt = rt.clone();
            std::thread::spawn(move || submitter(&rt, seed, 400))
        })
        .collect();
    let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(total >= 4000, "only {total} operations ran");
    assert_eq!(rt.outstanding(), 0, "cookies left in the table");
    drop(rt);
    assert_eq!(live_records(), before, "completion records leaked");
}

#[test]
fn dropping_the_engine_with_operations_in_flight_completes_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = live_records();
    let srcs: Vec<Vec<u8>> = (0..16).map(|i| vec![i as u8 + 1; 4 << 20]).collect();
    let mut dsts: Vec<Vec<u8>> = (0..16).map(|_| vec![0u8; 4 << 20]).collect();
    {
        let rt = Runtime::new(
            "thread",
            &EngineConfig {
                channels: 2,
                ..Default::default()
            },
        )
        .unwrap();
        let ops: Vec<Op> = srcs
            .iter()
            .zip(dsts.iter_mut())
            .map(|(s, d)| Op::copy(s.as_ptr(), d.as_mut_ptr(), s.len()))
            .collect();
        // SAFETY: the buffers outlive the runtime, whose drop waits for every operation.
        let cookies = unsafe { rt.submit_raw(&ops, false) }.unwrap();
        assert_eq!(cookies.len(), 16);
        // dropped here with (most) operations in flight
    }
    assert_eq!(srcs, dsts);
    assert_eq!(live_records(), before);
}

/// One operation of the property test: memmove or fill inside one buffer.
#[derive(Debug, Clone)]
enum POp {
    Move {
        src: usize,
        dst: usize,
        len: usize,
        cache: bool,
    },
    Fill {
        at: usize,
        len: usize,
        value: u8,
    },
}

fn pop_strategy(size: usize) -> impl Strategy<Value = POp> {
    prop_oneof![
        (0..size, 0..size, 0..size, any::<bool>()).prop_map(move |(a, b, l, cache)| {
            let len = l.min(size - a.max(b));
            POp::Move {
                src: a,
                dst: b,
                len,
                cache,
            }
        }),
        (0..size, 0..size, any::<u8>()).prop_map(move |(a, l, value)| POp::Fill {
            at: a,
            len: l.min(size - a),
            value
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Invariant: a sequence of engine operations leaves the buffer exactly as the sequential
    /// reference (slice::copy_within / fill) does, whatever the sizes, offsets and overlaps.
    #[test]
    fn engine_matches_reference(ops in prop::collection::vec(pop_strategy(300_000), 1..12), channels in 1usize..=3) {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = EngineConfig { channels, split_threshold: 32 << 10, nt_threshold: 8 << 10, ..Default::default() };
        let rt = Runtime::new("thread", &cfg).unwrap();
        let mut buf: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut want = buf.clone();
        for op in &ops {
            match *op {
                POp::Move { src, dst, len, cache } => {
                    want.copy_within(src..src + len, dst);
                    let base = buf.as_mut_ptr();
                    // SAFETY: both ranges lie inside buf, which outlives run_raw (it waits).
                    unsafe { rt.run_raw(Op::copy(base.add(src), base.add(dst), len).in_cache(cache)) }.unwrap();
                }
                POp::Fill { at, len, value } => {
                    want[at..at + len].fill(value);
                    rt.fill(&mut buf[at..at + len], value).unwrap();
                }
            }
        }
        prop_assert!(buf == want);
    }
}
