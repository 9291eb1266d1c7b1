#ifndef CAASAZLIB_SHIM_H
#define CAASAZLIB_SHIM_H

// zlib, to gzip each served file once when a site is loaded.
#include <zlib.h>

// deflateInit2 is a macro that passes the library version and the stream size.
static inline int CAASAZlib_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

// inflateInit2 is a macro that passes the library version and the stream size (tests decompress).
static inline int CAASAZlib_inflateInit2(z_streamp strm, int windowBits) { return inflateInit2(strm, windowBits); }

#endif
