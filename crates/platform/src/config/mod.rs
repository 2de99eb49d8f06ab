//! Configurations as pure data: what a platform ([`platform`]), a two-host I/O system ([`io`]) and
//! the network-I/O platform ([`network`]) are made of, and the workload programs they run
//! ([`workload`]). Each loads from a built-in preset or a TOML file through the one preset loader
//! (`sim::preset`) and checks its values; none imports a model.
pub mod io;
pub mod microengines;
pub mod network;
pub mod platform;
pub mod workload;

pub use platform::*;
