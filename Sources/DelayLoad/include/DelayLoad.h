// libcurl, libpq, libavcodec and libheif are loaded when first needed (dlopen), not when attachd
// starts.
//
// Only the S3 blob store needs libcurl and only the PostgreSQL index needs libpq, yet linking
// them brings ~25 shared libraries into every process (OpenSSL, Kerberos, LDAP, SASL, libssh2,
// nghttp2, ...): ~6 ms of symbol binding and page faults at each start, a fifth of what
// `attachd process` spends before it reads a byte, for a filesystem + SQLite service that never
// calls them. This target defines every libcurl and libpq function Storage calls, each
// forwarding to the real one in the library opened on first use, so Swift calls them by their
// own names. Storage asks `DelayLoad_curl`/`DelayLoad_pq` first and turns a missing library into
// a configuration error; ImageCodecs asks `DelayLoad_avcodec`/`DelayLoad_heif` before its first
// decoder and turns one into an internal codec error. A forwarder reached without a loaded
// library aborts (a bug, not input).
#pragma once
#include <curl/curl.h>
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
#include <libheif/heif.h>
#include <postgresql/libpq-fe.h>
#include <stddef.h>

// Opens libcurl.so.4, libpq.so.5, libavcodec.so.59 (with libavutil; AVCodec.c) or libheif.so.1
// (Heif.c) on the first call: NULL when it is loaded, else why not ("<soname> cannot be loaded:
// <dlerror>"), a string that lives as long as the process.
const char *DelayLoad_curl(void);
const char *DelayLoad_pq(void);
const char *DelayLoad_avcodec(void);
const char *DelayLoad_heif(void);

// curl_easy_setopt and curl_easy_getinfo are variadic C functions, which Swift cannot call. Each
// wrapper below passes exactly the argument type its options document, so no value is ever
// read through the wrong type by va_arg (which would be undefined behaviour).

// Options taking a `long` (CURLOPT_NOBODY, CURLOPT_CONNECTTIMEOUT_MS, ...).
CURLcode CCurl_setopt_long(CURL *handle, CURLoption option, long value);
// Options taking a `curl_off_t` (CURLOPT_INFILESIZE_LARGE): 64 bits, unlike `long` options.
CURLcode CCurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
// Options taking a NUL-terminated string, which curl copies (CURLOPT_URL, CURLOPT_USERNAME, ...).
CURLcode CCurl_setopt_string(CURL *handle, CURLoption option, const char *value);
// Options taking an object pointer curl keeps until the transfer ends (CURLOPT_WRITEDATA,
// CURLOPT_ERRORBUFFER, CURLOPT_HTTPHEADER's list, ...).
CURLcode CCurl_setopt_pointer(CURL *handle, CURLoption option, void *value);
// CURLOPT_WRITEFUNCTION, CURLOPT_READFUNCTION and CURLOPT_HEADERFUNCTION all take this one
// function type; a function pointer must not travel through a `void *` vararg.
typedef size_t (*CCurl_data_callback)(char *buffer, size_t size, size_t count, void *context);
CURLcode CCurl_setopt_data_callback(CURL *handle, CURLoption option, CCurl_data_callback callback);
// CURLOPT_SEEKFUNCTION: lets curl rewind an upload it must send again on a fresh connection.
CURLcode CCurl_setopt_seek_callback(CURL *handle, CURLoption option, curl_seek_callback callback);
// Infos returning a `long` (CURLINFO_RESPONSE_CODE, CURLINFO_OS_ERRNO).
CURLcode CCurl_getinfo_long(CURL *handle, CURLINFO info, long *value);
// Infos returning a `curl_off_t` (CURLINFO_FILETIME_T, CURLINFO_SIZE_UPLOAD_T, ...).
CURLcode CCurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value);

// PG_DIAG_* are character-literal macros ('C'), which Swift does not import.
int CPQ_diagSQLState(void);
int CPQ_diagMessagePrimary(void);
// Drops the connection's notices: libpq's default prints them on standard error ("relation
// already exists, skipping"), which would bypass the event log.
void CPQ_silenceNotices(PGconn *conn);
