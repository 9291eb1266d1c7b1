#ifndef CAASANGHTTP2_SHIM_H
#define CAASANGHTTP2_SHIM_H

// libnghttp2 (Debian 12: 1.52.0 with the CVE-2023-44487 and CVE-2024-28182 fixes backported),
// driven through its memory API: the server's event loop moves the bytes.
#include <nghttp2/nghttp2.h>

// The flag and frame-type constants are enums Swift imports as distinct types; plain ints here.
static const uint8_t CAASANghttp2_FLAG_END_STREAM = NGHTTP2_FLAG_END_STREAM;
static const uint8_t CAASANghttp2_HEADERS = NGHTTP2_HEADERS;
static const uint8_t CAASANghttp2_RST_STREAM = NGHTTP2_RST_STREAM;
static const uint8_t CAASANghttp2_DATA = NGHTTP2_DATA;
static const uint32_t CAASANghttp2_DATA_FLAG_EOF = NGHTTP2_DATA_FLAG_EOF;
static const int CAASANghttp2_ERR_CALLBACK_FAILURE = NGHTTP2_ERR_CALLBACK_FAILURE;
static const int CAASANghttp2_ERR_TEMPORAL_CALLBACK_FAILURE = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
static const uint32_t CAASANghttp2_ENHANCE_YOUR_CALM = NGHTTP2_ENHANCE_YOUR_CALM;
static const uint32_t CAASANghttp2_NO_ERROR = NGHTTP2_NO_ERROR;
static const uint32_t CAASANghttp2_REFUSED_STREAM = NGHTTP2_REFUSED_STREAM;
static const uint32_t CAASANghttp2_PROTOCOL_ERROR = NGHTTP2_PROTOCOL_ERROR;
static const uint32_t CAASANghttp2_INTERNAL_ERROR = NGHTTP2_INTERNAL_ERROR;
static const uint32_t CAASANghttp2_STREAM_CLOSED = NGHTTP2_STREAM_CLOSED;
static const int32_t CAASANghttp2_SETTINGS_HEADER_TABLE_SIZE = NGHTTP2_SETTINGS_HEADER_TABLE_SIZE;
static const int32_t CAASANghttp2_SETTINGS_MAX_CONCURRENT_STREAMS = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
static const int32_t CAASANghttp2_SETTINGS_MAX_HEADER_LIST_SIZE = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
static const int32_t CAASANghttp2_SETTINGS_INITIAL_WINDOW_SIZE = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
static const int32_t CAASANghttp2_SETTINGS_NO_RFC7540_PRIORITIES = NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES;
static const uint8_t CAASANghttp2_NV_FLAG_NONE = NGHTTP2_NV_FLAG_NONE;
// A field whose name (lower case) and value nghttp2 points at instead of copying.
static const uint8_t CAASANghttp2_NV_FLAG_NO_COPY = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
// A field whose name (lower case, living as long as the process) nghttp2 points at, and whose
// value it copies.
static const uint8_t CAASANghttp2_NV_FLAG_NO_COPY_NAME = NGHTTP2_NV_FLAG_NO_COPY_NAME;
// A DATA frame whose bytes the send_data callback writes itself.
static const uint32_t CAASANghttp2_DATA_FLAG_NO_COPY = NGHTTP2_DATA_FLAG_NO_COPY;
static const int CAASANghttp2_ERR_PAUSE = NGHTTP2_ERR_PAUSE;
static inline size_t CAASANghttp2_frame_padding(const nghttp2_frame *frame) { return frame->data.padlen; }

// The frame type of a frame (frame->hd.type), reached through the union.
static inline uint8_t CAASANghttp2_frame_type(const nghttp2_frame *frame) { return frame->hd.type; }
static inline uint8_t CAASANghttp2_frame_flags(const nghttp2_frame *frame) { return frame->hd.flags; }
static inline int32_t CAASANghttp2_frame_stream_id(const nghttp2_frame *frame) { return frame->hd.stream_id; }
static inline int CAASANghttp2_frame_headers_category(const nghttp2_frame *frame) { return frame->headers.cat; }
static const int CAASANghttp2_HCAT_REQUEST = NGHTTP2_HCAT_REQUEST;

// Whether nghttp2 still has the stream open (it may keep closed streams for priorities): a
// response for any other stream would never be asked for its body.
static inline int CAASANghttp2_stream_is_open(nghttp2_session *session, int32_t stream_id) {
    nghttp2_stream *stream = nghttp2_session_find_stream(session, stream_id);
    if (stream == NULL) return 0;
    nghttp2_stream_proto_state state = nghttp2_stream_get_state(stream);
    return state != NGHTTP2_STREAM_STATE_CLOSED && state != NGHTTP2_STREAM_STATE_IDLE;
}

// Whether nghttp2 has sent the end of the stream's response and the client has not ended the
// stream (half-closed (local), RFC 9113 §5.1).
static inline int CAASANghttp2_stream_is_half_closed_local(nghttp2_session *session, int32_t stream_id) {
    nghttp2_stream *stream = nghttp2_session_find_stream(session, stream_id);
    return stream != NULL && nghttp2_stream_get_state(stream) == NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL;
}

#endif
