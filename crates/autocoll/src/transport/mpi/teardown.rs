//! A transport's end: what MPI still uses finishes or is left allocated.

use std::time::Instant;

use mpi::ffi;

use super::calls::{finalized, request_null};
use super::{Mpi, NAP};
use crate::transport::DEFAULT_TIMEOUT;

impl Drop for Mpi {
    /// Waits (up to the timeout, at most [`DEFAULT_TIMEOUT`]) for sends and
    /// payloads in flight, then cancels the standing header receives, so
    /// that no buffer MPI still uses is freed. Buffers of requests that
    /// never complete are leaked on purpose rather than freed under MPI.
    fn drop(&mut self) {
        let deadline = Instant::now() + self.timeout.min(DEFAULT_TIMEOUT);
        while self.in_flight() && Instant::now() < deadline {
            if self.progress(false).is_err() {
                break;
            }
            std::thread::sleep(NAP);
        }
        if finalized() {
            self.leak_buffers();
            return;
        }
        self.cancel_headers();
        if self.in_flight() {
            self.leak_buffers();
        }
        // SAFETY: the duplicate is this transport's own and MPI is not
        // finalised; a failure leaves a communicator allocated, no worse.
        unsafe { ffi::PMPI_Comm_free(&mut self.comm) };
    }
}

impl Mpi {
    /// Cancels each standing header receive and waits for it (a cancelled
    /// receive completes at once; one that matched has its message).
    fn cancel_headers(&mut self) {
        let null = request_null();
        for src in 0..self.size {
            let request = &mut self.requests[src];
            if *request == null {
                continue;
            }
            // SAFETY: a live receive of this transport; waiting after the
            // cancel releases it before its buffer is freed.
            unsafe {
                ffi::PMPI_Cancel(request);
                ffi::PMPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
            }
        }
    }

    /// Leaves every buffer MPI may still write or read allocated.
    fn leak_buffers(&mut self) {
        std::mem::forget(std::mem::take(&mut self.pending));
        std::mem::forget(std::mem::take(&mut self.header_bufs));
        for queue in &mut self.arriving {
            std::mem::forget(std::mem::take(queue));
        }
    }
}
