//! libespeak-ng in this process: its one global engine, initialized once,
//! and the callback that collects the samples it speaks.
//!
//! The engine keeps global state, so every call here holds the engine's
//! lock; a forked child speaks into its worker's shared buffer instead of a
//! vector ([`synthesize_into_buffer`]).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_int, c_short, c_void};
use std::sync::{Mutex, OnceLock};

use espeakng_sys as sys;

use super::EngineRequest;
use crate::audio::AudioClip;

/// The initialized engine; holding its lock is holding libespeak-ng.
pub(super) struct Engine {
    /// Sample rate of everything the engine speaks.
    pub(super) sample_rate: u32,
    /// The voice last selected, by whichever caller: the fork server skips
    /// loading a voice that is already selected, and must notice when
    /// another caller in the process (the English phonemes of the neural
    /// voice) selected a different one.
    pub(super) voice: Option<String>,
}

static ENGINE: OnceLock<Result<Mutex<Engine>, String>> = OnceLock::new();

/// Where the synthesis callback puts the engine's samples.
enum Sink {
    /// A growing vector (synthesis in this process).
    Vec(Vec<i16>),
    /// The worker's shared buffer (synthesis in a forked child).
    Shared {
        buf: *mut i16,
        capacity: usize,
        len: usize,
        /// Samples from the start whose pages this process has mapped.
        populated: usize,
        overflow: bool,
    },
}

/// Samples mapped in one go in the shared buffer (256 KiB, a multiple of
/// the page size).
const POPULATE_STEP: usize = 128 << 10;
/// Samples per 4 KiB page: populated ranges stay page-aligned.
const PAGE_SAMPLES: usize = 2048;

thread_local! {
    static CAPTURE: RefCell<Sink> = const { RefCell::new(Sink::Vec(Vec::new())) };
}

unsafe extern "C" fn capture(
    wav: *mut c_short,
    n: c_int,
    _events: *mut sys::espeak_EVENT,
) -> c_int {
    if wav.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: espeak-ng passes a buffer of `n` samples valid for this call.
    let chunk = unsafe { std::slice::from_raw_parts(wav, n as usize) };
    CAPTURE.with(|c| match &mut *c.borrow_mut() {
        Sink::Vec(samples) => {
            samples.extend_from_slice(chunk);
            0
        }
        Sink::Shared {
            buf,
            capacity,
            len,
            populated,
            overflow,
        } => {
            if *capacity - *len < chunk.len() {
                *overflow = true;
                // Non-zero asks espeak-ng to stop.
                return 1;
            }
            let end = *len + chunk.len();
            if end > *populated {
                // One call maps the pages ahead, instead of one page fault
                // per page written (the pages exist already after the first
                // request; a kernel without MADV_POPULATE_WRITE just faults).
                let upto = (*populated + POPULATE_STEP)
                    .max(end.next_multiple_of(PAGE_SAMPLES))
                    .min(*capacity);
                // SAFETY: the range lies inside the mapping, and madvise
                // only maps its pages; a failure changes nothing.
                unsafe {
                    libc::madvise(
                        buf.add(*populated) as *mut c_void,
                        (upto - *populated) * 2,
                        libc::MADV_POPULATE_WRITE,
                    )
                };
                *populated = upto;
            }
            // SAFETY: `buf` points to `capacity` writable samples (the
            // contract of `synthesize_into_buffer`), and `len + chunk.len()`
            // stays within them.
            unsafe {
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), buf.add(*len), chunk.len());
            }
            *len += chunk.len();
            0
        }
    })
}

/// The engine, initialized on first use; why it cannot start, if it cannot.
pub(super) fn engine() -> Result<&'static Mutex<Engine>, String> {
    ENGINE
        .get_or_init(|| {
            // SAFETY: called once, guarded by OnceLock; a null path selects
            // the installed espeak-ng data.
            let rate = unsafe {
                sys::espeak_Initialize(
                    sys::espeak_AUDIO_OUTPUT_AUDIO_OUTPUT_SYNCHRONOUS,
                    0,
                    std::ptr::null(),
                    0,
                )
            };
            if rate <= 0 {
                return Err(
                    "libespeak-ng failed to initialize (is the espeak-ng-data package installed?)"
                        .into(),
                );
            }
            // SAFETY: the callback has the signature espeak-ng expects.
            unsafe { sys::espeak_SetSynthCallback(Some(capture)) };
            Ok(Mutex::new(Engine {
                sample_rate: rate as u32,
                voice: None,
            }))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Synthesizes one request in this process (blocking; serialized).
pub fn synthesize_blocking(req: &EngineRequest) -> Result<AudioClip, String> {
    let engine = engine()?;
    let mut guard = engine.lock().unwrap_or_else(|e| e.into_inner());
    select_voice(&mut guard, &req.voice)?;
    speak(&guard, req)
}

/// The IPA phonemes (UTF-8) that espeak-ng's `voice` gives `text`, words
/// separated by spaces: how another backend learns to say a Latin word.
/// Serialized with synthesis by the engine's lock.
pub fn phonemes_ipa(voice: &str, text: &str) -> Result<String, String> {
    let engine = engine()?;
    let mut guard = engine.lock().unwrap_or_else(|e| e.into_inner());
    select_voice(&mut guard, voice)?;
    let text = CString::new(text).map_err(|_| "text contains NUL".to_owned())?;
    let mut at = text.as_ptr() as *const c_void;
    let mut out = String::new();
    while !at.is_null() {
        let before = at;
        // SAFETY: the engine is initialized and we hold its lock; `at`
        // points into `text`, which outlives the loop, and espeak-ng moves
        // it past each clause it reads (to null at the end). The string it
        // returns is valid until its next call and is copied at once.
        let clause = unsafe {
            let p = sys::espeak_TextToPhonemes(
                &mut at,
                sys::espeakCHARS_UTF8 as c_int,
                sys::espeakPHONEMES_IPA as c_int,
            );
            if p.is_null() {
                break;
            }
            CStr::from_ptr(p).to_string_lossy().into_owned()
        };
        let clause = clause.trim();
        if !clause.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(clause);
        }
        if at == before {
            break;
        }
    }
    Ok(out)
}

/// Makes `voice` the engine's voice.
pub(super) fn select_voice(engine: &mut Engine, voice: &str) -> Result<(), String> {
    engine.voice = None;
    let name = CString::new(voice).map_err(|_| "voice name contains NUL".to_owned())?;
    // SAFETY: the engine is initialized and the caller holds its lock; the
    // name outlives the call.
    if unsafe { sys::espeak_SetVoiceByName(name.as_ptr()) } != sys::espeak_ERROR_EE_OK {
        return Err(format!("espeak-ng has no voice '{voice}'"));
    }
    engine.voice = Some(voice.to_owned());
    Ok(())
}

/// Speaks `req.text` with the selected voice at the request's rate and pitch.
fn speak(engine: &Engine, req: &EngineRequest) -> Result<AudioClip, String> {
    CAPTURE.with(|c| *c.borrow_mut() = Sink::Vec(Vec::new()));
    synthesize_into_sink(req)?;
    let samples =
        CAPTURE.with(
            |c| match std::mem::replace(&mut *c.borrow_mut(), Sink::Vec(Vec::new())) {
                Sink::Vec(samples) => samples,
                Sink::Shared { .. } => Vec::new(),
            },
        );
    Ok(AudioClip::from_i16(&samples, engine.sample_rate))
}

/// Runs one synthesis; the samples go to this thread's [`Sink`].
fn synthesize_into_sink(req: &EngineRequest) -> Result<(), String> {
    let text = CString::new(req.text.as_str()).map_err(|_| "text contains NUL".to_owned())?;
    // SAFETY: the engine is initialized and the caller holds its lock; all
    // pointers outlive the calls.
    let status = unsafe {
        sys::espeak_SetParameter(sys::espeak_PARAMETER_espeakRATE, req.rate as c_int, 0);
        if let Some(pitch) = req.pitch {
            sys::espeak_SetParameter(
                sys::espeak_PARAMETER_espeakPITCH,
                c_int::from(pitch.min(99)),
                0,
            );
        }
        let bytes = text.as_bytes_with_nul();
        let status = sys::espeak_Synth(
            bytes.as_ptr() as *const c_void,
            bytes.len(),
            0,
            sys::espeak_POSITION_TYPE_POS_CHARACTER,
            0,
            sys::espeakCHARS_UTF8 | if req.ssml { sys::espeakSSML } else { 0 },
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        sys::espeak_Synchronize();
        status
    };
    if status != sys::espeak_ERROR_EE_OK {
        return Err(format!("espeak-ng synthesis failed (status {status})"));
    }
    Ok(())
}

/// Runs one synthesis into the `capacity` samples at `buf` (the shared
/// buffer of a forked child): how many samples it left there, or why it
/// failed.
///
/// # Safety
///
/// `buf` must point to `capacity` writable samples that nothing else reads
/// or writes until this returns, and the caller must hold the lock of the
/// initialized [`engine`].
pub(super) unsafe fn synthesize_into_buffer(
    req: &EngineRequest,
    buf: *mut i16,
    capacity: usize,
) -> Result<usize, String> {
    CAPTURE.with(|c| {
        *c.borrow_mut() = Sink::Shared {
            buf,
            capacity,
            len: 0,
            populated: 0,
            overflow: false,
        }
    });
    let result = synthesize_into_sink(req);
    CAPTURE.with(|c| match (&*c.borrow(), result) {
        (Sink::Shared { overflow: true, .. }, _) => Err(format!(
            "one request gave more than {} minutes of audio",
            capacity / 22050 / 60
        )),
        (Sink::Shared { len, .. }, Ok(())) => Ok(*len),
        (_, Err(e)) => Err(e),
        (Sink::Vec(_), Ok(())) => Err("capture was not set up".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::espeak::tests::{req, turn};

    #[test]
    fn speaks_pinyin_in_process() {
        let _turn = turn();
        let clip = synthesize_blocking(&req("cmn-latn-pinyin", "ni3 hao3, shi4 jie4.")).unwrap();
        assert_eq!(clip.sample_rate, 22050);
        let secs = clip.duration_s();
        assert!((0.5..4.0).contains(&secs), "{secs}");
        assert!(clip.peak() > 0.05);
    }

    #[test]
    fn unknown_voice_is_an_error() {
        let _turn = turn();
        let err = synthesize_blocking(&req("no-such-voice-xx", "ni3")).unwrap_err();
        assert!(err.contains("no-such-voice-xx"), "{err}");
    }
}
