/* vpipe's C API: what the Python package (python/vpipe, ctypes) calls.
 *
 * Why C and ctypes, not a compiled extension: the same library then serves
 * any Python 3 (Debian's 3.11 in CI, 3.12 with PyTorch on the GPU machine)
 * with no build per interpreter. DLPack (dlpack.h) is the tensor exchange.
 *
 * Errors: a function that fails returns NULL or -1; vpipe_last_error() has
 * the message (this thread's last), vpipe_last_error_kind() its kind.
 * Options travel as JSON text; reports come back as JSON text that lives
 * until the handle is freed. */
#ifndef VPIPE_CAPI_H
#define VPIPE_CAPI_H

#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vpipe_frame vpipe_frame;
typedef struct vpipe_decoder vpipe_decoder;
typedef struct vpipe_encoder vpipe_encoder;
typedef struct vpipe_job vpipe_job;

enum {
  VPIPE_ERROR_NONE = 0,
  VPIPE_ERROR_INPUT = 1,
  VPIPE_ERROR_INTERRUPTED = 2,
  VPIPE_ERROR_RUNTIME = 3
};
const char* vpipe_last_error(void);
int vpipe_last_error_kind(void);
const char* vpipe_version(void);
/* 0 (the default, as the CLI's): FFmpeg quiet, vpipe's warnings; 1: FFmpeg's
 * warnings and vpipe's debug log (the CLI's -v). */
void vpipe_set_verbose(int verbose);

/* ---- frames -------------------------------------------------------------- */
typedef struct {
  int width, height, num_planes;
  int on_device; /* 1: device memory (CUDA), 0: host */
  int device_id;
  char pix_fmt[32]; /* FFmpeg's name: "nv12", "yuv420p", "rgb24"… */
  int64_t pts, index;
  int time_base_num, time_base_den;
  uint64_t plane_data[4];
  int plane_width[4], plane_height[4], plane_channels[4];
  int64_t plane_pitch[4];
  int sample_bytes; /* of one sample: 1, or 2 for 9- to 16-bit formats (p010le, yuv420p10le):
                       plane_channels counts bytes, a pixel has plane_channels / sample_bytes */
} vpipe_frame_info;

void vpipe_frame_get_info(const vpipe_frame* f, vpipe_frame_info* out);
/* A DLPack tensor aliasing plane `plane` (0..3) of the frame, or the whole
 * frame (-1: a one-plane frame, or NV12 whose planes are one block, as
 * H*3/2 rows). It holds the frame's memory until its deleter runs.
 * sync: 0 none; 1 block the host until the frame is ready; 2 make `stream`
 * wait for the frame (no host blocking), and retire the memory on it. */
DLManagedTensor* vpipe_frame_dlpack(vpipe_frame* f, int plane, int sync, uint64_t stream);
/* The destructor of a "dltensor" PyCapsule made with PyCapsule_New: runs
 * the tensor's deleter unless a consumer took it (renamed "used_dltensor").
 * It calls the Python C API of the process that loaded this library. */
void vpipe_dlpack_capsule_destructor(void* capsule);
void vpipe_frame_release(vpipe_frame* f);

/* ---- decoding: a transcode whose output is the caller ------------------- */
/* options: {"input", "filters", "device": "auto|cpu|cuda", "decode":
 * "auto|cpu|nvdec", "mem", "budget", "max_frames", "queue_depth", "loop"} */
vpipe_decoder* vpipe_decoder_open(const char* options_json);
/* 1: *frame set; 0: the end; -1: failed (the error); 2: none within timeout_ms. */
int vpipe_decoder_next(vpipe_decoder* d, int timeout_ms, vpipe_frame** frame);
const char* vpipe_decoder_report(vpipe_decoder* d); /* after the end: the run's report */
/* Stops the run (frames already taken stay valid) and frees the handle. */
void vpipe_decoder_close(vpipe_decoder* d);

/* ---- encoding tensors and frames ----------------------------------------- */
/* options: {"path", "encoder", "fps": [num, den], "time_base": [num, den],
 * "crf", "preset", "qscale", "audio_from"} */
vpipe_encoder* vpipe_encoder_open(const char* options_json);
/* Takes ownership of `t` (its deleter runs before return). format: NULL to
 * infer from the shape (H×W gray, H×W×3 rgb24, H×W×4 rgba) or "nv12" (H*3/2
 * × W). has_pts 0: the next frame's time. */
int vpipe_encoder_write_dlpack(vpipe_encoder* e, DLManagedTensor* t, const char* format,
                               int has_pts, int64_t pts);
int vpipe_encoder_write_frame(vpipe_encoder* e, const vpipe_frame* f, int has_pts, int64_t pts);
int vpipe_encoder_close(vpipe_encoder* e); /* finalizes the file; the handle stays until freed */
const char* vpipe_encoder_stats(vpipe_encoder* e);
void vpipe_encoder_free(vpipe_encoder* e); /* finalizes first if not closed */

/* ---- transcodes with a Python filter ------------------------------------- */
/* The filter "python=slot=N" calls fn(user, in, out, stream) per frame: `in`
 * is ready on `stream` (0 on the CPU path), `out` is a frame of the same
 * format to fill, stream-ordered on `stream`. Nonzero from fn fails the run. */
typedef int (*vpipe_filter_fn)(void* user, vpipe_frame* in, vpipe_frame* out, uint64_t stream);
int vpipe_filter_register(vpipe_filter_fn fn, void* user); /* the slot */
void vpipe_filter_unregister(int slot);
/* options: the decoder's, plus "output", "encoder", "crf", "preset",
 * "qscale", "report"; the filter chain may name python=slot=N. */
vpipe_job* vpipe_transcode_open(const char* options_json);
int vpipe_transcode_run(vpipe_job* j); /* blocks; 0 done, -1 failed */
void vpipe_transcode_interrupt(vpipe_job* j);
const char* vpipe_transcode_report(vpipe_job* j);
void vpipe_transcode_free(vpipe_job* j);

/* ---- filters ------------------------------------------------------------- */
int vpipe_load_plugin(const char* path);
const char* vpipe_filter_names(void); /* JSON list */
/* The memory strategies `mem` takes, and those the benches compare: JSON {"all": […], "compared":
 * […]}. */
const char* vpipe_strategy_names(void);

/* ---- a long file in pieces (io/join.hpp) ---------------------------------- */
/* {"time_base": [n, d], "start_s", "first_pts", "end_pts", "keyframes": [pts…], "packets"}, or null
 * (vpipe_last_error says why). Valid until this thread's next call. */
const char* vpipe_keyframes(const char* path);
/* {"parts": […], "starts_s": […], "audio_from", "audio_start_s", "output"} →
 * {"video_packets", "audio_packets"}, or null. Valid until this thread's next call. */
const char* vpipe_join(const char* request_json);

#ifdef __cplusplus
}
#endif
#endif
