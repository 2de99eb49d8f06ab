//! The C ABI (see `include/movelab_host.h`): create/destroy an engine, copy, icopy, check, wait,
//! fill, wait_all. Functions return 0 (or 1 for "done" from `check`) on success and a negative
//! `MOVELAB_E*` code on failure; `movelab_last_error()` gives the message of the calling thread's
//! last failure. No function panics across the boundary.
use crate::engine::EngineConfig;
use crate::error::HostError;
use crate::runtime::{Cookie, Runtime};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};

/// Opaque engine handle for C.
pub struct MovelabEngine(Runtime);

pub const MOVELAB_OK: c_int = 0;
pub const MOVELAB_EINVAL: c_int = -1;
pub const MOVELAB_ECOOKIE: c_int = -2;
pub const MOVELAB_EABORTED: c_int = -3;
pub const MOVELAB_EOS: c_int = -4;
pub const MOVELAB_EFORKED: c_int = -5;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

pub(crate) fn set_error(msg: String) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

fn code(e: HostError) -> c_int {
    let c = match e {
        HostError::UnknownCookie(_) => MOVELAB_ECOOKIE,
        HostError::Aborted(_) => MOVELAB_EABORTED,
        HostError::Os(_) => MOVELAB_EOS,
        HostError::Forked { .. } => MOVELAB_EFORKED,
        _ => MOVELAB_EINVAL,
    };
    set_error(e.to_string());
    c
}

pub(crate) fn guarded<F: FnOnce() -> c_int>(f: F) -> c_int {
    // The runtime keeps no state a panic could leave half-updated that matters to the caller.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        set_error("internal error (panic) in movelab".into());
        MOVELAB_EINVAL
    })
}

fn engine<'a>(e: *const MovelabEngine) -> Result<&'a Runtime, c_int> {
    if e.is_null() {
        set_error("null engine handle".into());
        return Err(MOVELAB_EINVAL);
    }
    // SAFETY: non-null handles come from movelab_engine_create and stay valid until
    // movelab_engine_destroy (the documented contract of the C API).
    Ok(unsafe { &(*e).0 })
}

/// The message of the calling thread's last error ("" if none). Valid until the next call.
#[no_mangle]
pub extern "C" fn movelab_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Create an engine by name ("cpu" or "thread") with `channels` channels (0 = default).
/// Returns NULL on error (see movelab_last_error).
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn movelab_engine_create(
    name: *const c_char,
    channels: u32,
) -> *mut MovelabEngine {
    if name.is_null() {
        set_error("null engine name".into());
        return std::ptr::null_mut();
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let mut cfg = EngineConfig::default();
    if channels > 0 {
        cfg.channels = channels as usize;
    }
    match std::panic::catch_unwind(|| Runtime::new(&name, &cfg)) {
        Ok(Ok(rt)) => Box::into_raw(Box::new(MovelabEngine(rt))),
        Ok(Err(e)) => {
            code(e);
            std::ptr::null_mut()
        }
        Err(_) => {
            set_error("internal error (panic) creating engine".into());
            std::ptr::null_mut()
        }
    }
}

/// Destroy an engine: waits for every operation still in flight. NULL is ignored.
///
/// # Safety
/// `e` must come from movelab_engine_create and not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn movelab_engine_destroy(e: *mut MovelabEngine) {
    if !e.is_null() {
        // SAFETY: the handle was created by Box::into_raw in movelab_engine_create.
        drop(unsafe { Box::from_raw(e) });
    }
}

/// Blocking copy of `len` bytes from `src` to `dst` (overlap allowed: memmove semantics).
///
/// # Safety
/// `src`/`dst` valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn movelab_copy(
    e: *const MovelabEngine,
    src: *const u8,
    dst: *mut u8,
    len: usize,
) -> c_int {
    guarded(|| match engine(e) {
        // SAFETY: the caller guarantees the buffers; run_raw waits before returning.
        Ok(rt) => {
            unsafe { rt.run_raw(crate::Op::copy(src, dst, len)) }.map_or_else(code, |_| MOVELAB_OK)
        }
        Err(c) => c,
    })
}

/// Non-blocking copy; stores the cookie in `*cookie`.
///
/// # Safety
/// `src`/`dst` valid for `len` bytes and untouched until the cookie is waited; `cookie` writable.
#[no_mangle]
pub unsafe extern "C" fn movelab_icopy(
    e: *const MovelabEngine,
    src: *const u8,
    dst: *mut u8,
    len: usize,
    cookie: *mut u64,
) -> c_int {
    guarded(|| {
        let rt = match engine(e) {
            Ok(rt) => rt,
            Err(c) => return c,
        };
        if cookie.is_null() {
            set_error("null cookie pointer".into());
            return MOVELAB_EINVAL;
        }
        // SAFETY: the caller keeps the buffers valid until the cookie is waited for.
        match unsafe { rt.icopy_raw(src, dst, len, false) } {
            Ok(c) => {
                // SAFETY: checked non-null; the caller passes a writable u64.
                unsafe { *cookie = c.0 };
                MOVELAB_OK
            }
            Err(err) => code(err),
        }
    })
}

/// 1 if the operation has completed, 0 if not, negative on error.
///
/// # Safety
/// `e` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn movelab_check(e: *const MovelabEngine, cookie: u64) -> c_int {
    guarded(|| match engine(e) {
        Ok(rt) => rt.check(Cookie(cookie)).map_or_else(code, c_int::from),
        Err(c) => c,
    })
}

/// Wait for the operation and retire its cookie.
///
/// # Safety
/// `e` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn movelab_wait(e: *const MovelabEngine, cookie: u64) -> c_int {
    guarded(|| match engine(e) {
        Ok(rt) => rt.wait(Cookie(cookie)).map_or_else(code, |_| MOVELAB_OK),
        Err(c) => c,
    })
}

/// Wait for every outstanding operation.
///
/// # Safety
/// `e` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn movelab_wait_all(e: *const MovelabEngine) -> c_int {
    guarded(|| match engine(e) {
        Ok(rt) => rt.wait_all().map_or_else(code, |_| MOVELAB_OK),
        Err(c) => c,
    })
}

/// Blocking fill of `len` bytes at `dst` with `value`.
///
/// # Safety
/// `dst` valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn movelab_fill(
    e: *const MovelabEngine,
    dst: *mut u8,
    value: u8,
    len: usize,
) -> c_int {
    guarded(|| match engine(e) {
        // SAFETY: the caller guarantees the buffer; run_raw waits before returning.
        Ok(rt) => unsafe { rt.run_raw(crate::Op::fill(dst, value, len)) }
            .map_or_else(code, |_| MOVELAB_OK),
        Err(c) => c,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: movelab_last_error returns a valid NUL-terminated string of this thread.
        unsafe { CStr::from_ptr(movelab_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn bad_arguments_name_the_argument() {
        // SAFETY: a valid NUL-terminated name.
        let e = unsafe { movelab_engine_create(c"thread".as_ptr(), 1000) };
        assert!(e.is_null());
        assert!(last().contains("channels = 1000"), "{}", last());
        // SAFETY: a valid name; the handle is destroyed below.
        let e = unsafe { movelab_engine_create(c"thread".as_ptr(), 1) };
        let mut b = [0u8; 4];
        // SAFETY: e is live; a null cookie pointer is refused before use.
        let rc = unsafe { movelab_icopy(e, b.as_ptr(), b.as_mut_ptr(), 4, std::ptr::null_mut()) };
        assert_eq!(rc, MOVELAB_EINVAL);
        assert!(last().contains("cookie"), "{}", last());
        // SAFETY: as above; the null source is refused before any memory is touched.
        let rc = unsafe { movelab_copy(e, std::ptr::null(), b.as_mut_ptr(), 4) };
        assert_eq!(rc, MOVELAB_EINVAL);
        assert!(last().contains("source"), "{}", last());
        // SAFETY: e is live.
        assert_eq!(unsafe { movelab_wait(e, 77) }, MOVELAB_ECOOKIE);
        assert!(last().contains("77"), "{}", last());
        crate::runtime::tests::in_forked_child(|| {
            let mut d = [0u8; 4];
            // SAFETY: e is live (inherited); refused in the child before any memory is touched.
            let rc = unsafe { movelab_copy(e, b.as_ptr(), d.as_mut_ptr(), 4) };
            rc == MOVELAB_EFORKED && last().contains("forked")
        });
        // SAFETY: created above, not used afterwards.
        unsafe { movelab_engine_destroy(e) };
    }
}
