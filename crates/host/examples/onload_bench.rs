//! Run the onload benchmark without Python: `cargo run --release -p movelab-host --example
//! onload_bench -- '{"sizes":[64],"seconds":0.5}'`; prints the JSON rows.
fn main() {
    let spec = std::env::args().nth(1).unwrap_or_default();
    match movelab_host::onload::bench::run(&spec) {
        Ok(rows) => println!("{rows}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
