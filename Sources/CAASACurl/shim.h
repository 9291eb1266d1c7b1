#ifndef CAASACURL_SHIM_H
#define CAASACURL_SHIM_H

// libcurl (Debian's libcurl4-openssl-dev), plus typed wrappers for its variadic calls, which
// Swift cannot make: curl_easy_setopt and curl_easy_getinfo take one argument of an
// option-dependent type. Each wrapper passes exactly the type its options document.

#include <curl/curl.h>

// curl_easy_setopt for options that take a long (timeouts, flags, sizes).
static inline CURLcode CAASACurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

// curl_easy_setopt for options that take a char * or another pointer (URLs, paths, user data,
// header lists).
static inline CURLcode CAASACurl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

// curl_easy_setopt for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION, whose callbacks share
// this type.
typedef size_t (*CAASACurl_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode CAASACurl_setopt_data_callback(CURL *handle, CURLoption option, CAASACurl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

// curl_easy_getinfo for CURLINFO_RESPONSE_CODE and the other long-valued infos.
static inline CURLcode CAASACurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

// curl_easy_setopt for CURLOPT_XFERINFOFUNCTION: called often during a transfer (connect
// included); a non-zero return aborts it (CURLE_ABORTED_BY_CALLBACK).
typedef int (*CAASACurl_progress_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode CAASACurl_setopt_progress_callback(CURL *handle, CAASACurl_progress_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

// curl_easy_getinfo for CURLINFO_CERTINFO (a struct curl_certinfo * written to *value).
static inline CURLcode CAASACurl_getinfo_certinfo(CURL *handle, struct curl_certinfo **value) {
    return curl_easy_getinfo(handle, CURLINFO_CERTINFO, value);
}

#endif
