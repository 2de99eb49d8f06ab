//! Run one host benchmark kernel without Python: `cargo run --release -p movelab-host --example
//! host_bench -- NAME ['{"sizes":[64]}']`; prints the JSON rows.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: host_bench NAME [SPEC_JSON]  (NAME: latency, bandwidth, overlap, pollution, breakdown)");
        std::process::exit(2);
    };
    let spec = args.get(1).map(String::as_str).unwrap_or("{}");
    match movelab_host::bench::run(name, spec) {
        Ok(rows) => println!("{rows}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
