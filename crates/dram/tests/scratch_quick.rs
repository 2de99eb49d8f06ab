use movelab_dram::config::Config;
use movelab_dram::mapper;
use movelab_dram::request::*;
use movelab_dram::system::{simulate, RunOptions};

#[test]
fn quick() {
    let cfg = Config::preset("rowclone-ddr3-1066").unwrap();
    let spec = cfg.resolve("x").unwrap();
    let m = mapper::build(&cfg.controller.mapper, &spec.org, false).unwrap();
    // find pairs
    let base = 0u64;
    let l0 = m.map(base);
    println!(
        "row bytes {} lpr {} loc {:?}",
        spec.org.row_bytes(),
        spec.org.lines_per_row(),
        l0
    );
    for (name, bulk) in [("baseline", "baseline"), ("rc", "rowclone")] {
        let mut c = cfg.clone();
        c.controller.bulk = bulk.into();
        // same subarray: dst = row+1 same bank
        let mut l = l0;
        l.row += 1;
        let dst_same = m.unmap(&l);
        let mut l2 = l0;
        l2.bank = 1;
        let dst_other = m.unmap(&l2);
        let mut l3 = l0;
        l3.row += 600;
        let dst_intra = m.unmap(&l3);
        for (case, dst) in [
            ("same-sa", dst_same),
            ("inter", dst_other),
            ("intra", dst_intra),
        ] {
            let items = vec![Ok(TraceItem::Bulk(BulkOp {
                kind: BulkKind::Copy { src: base },
                dst,
                bytes: 4096,
                arrival: None,
            }))];
            let s = simulate(&c, items.into_iter(), RunOptions::default()).unwrap();
            println!(
                "{name} {case}: cycles {} ns {:.1} energy {:.3} uJ {:?} bytes {:?}",
                s.cycles,
                s.time_ns,
                s.energy.total_nj / 1000.0,
                s.commands,
                s.bulk.bytes
            );
        }
        let items = vec![Ok(TraceItem::Bulk(BulkOp {
            kind: BulkKind::Init { value: 0 },
            dst: base,
            bytes: 4096,
            arrival: None,
        }))];
        let s = simulate(&c, items.into_iter(), RunOptions::default()).unwrap();
        println!(
            "{name} zero: cycles {} ns {:.1} energy {:.3} uJ {:?}",
            s.cycles,
            s.time_ns,
            s.energy.total_nj / 1000.0,
            s.energy
        );
    }
    // stream bench small
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    for (kind, n) in [("stream", 1_000_000u64), ("random", 1_000_000)] {
        let mut x: u64 = 12345;
        let items = (0..n).map(move |i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = if kind == "stream" {
                i * 64
            } else {
                (x % (1u64 << 32)) & !63
            };
            let op = if x % 10 < 8 { Op::Read } else { Op::Write };
            Ok(TraceItem::Req(Request {
                addr,
                op,
                arrival: None,
            }))
        });
        let t = std::time::Instant::now();
        let s = simulate(&cfg, items, RunOptions::default()).unwrap();
        let el = t.elapsed().as_secs_f64();
        println!("{kind}: {n} req in {el:.2}s = {:.2} M req/s; cycles {} ({:.3}/req) rd lat mean {:.1} p99 {} hits {:?} cmds {:?}", n as f64/el/1e6, s.cycles, s.cycles as f64/n as f64, s.read_latency.mean_cycles, s.read_latency.p99_cycles, s.row, s.commands);
    }
}
