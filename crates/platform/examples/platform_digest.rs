//! Prints the golden lines of every simulator and system-level reproduction
//! (`experiments::golden`): one line per case, with digests of its DRAM command log and results.
//! `cargo run --release -p movelab-platform --example platform_digest [SECTION...]` (sections:
//! platform, io, network, reproductions; all by default). `tests/golden.rs` compares the same
//! lines with `tests/golden/SECTION.txt`; run it with `MOVELAB_BLESS=1` to rewrite those files.
use movelab_platform::experiments::golden::{lines, SECTIONS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sections: Vec<&str> = if args.is_empty() {
        SECTIONS.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    for s in sections {
        match lines(s) {
            Ok(ls) => ls.iter().for_each(|l| println!("{l}")),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        }
    }
}
