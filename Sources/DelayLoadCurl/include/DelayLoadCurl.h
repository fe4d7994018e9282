// libcurl (the S3 client), loaded when first needed rather than when attachd starts; the
// mechanism is DelayLoad's (Sources/DelayLoad).
//
// Only the S3 blob store needs libcurl (and only the PostgreSQL index libpq), yet linking them
// brings ~25 shared libraries into every process (OpenSSL, Kerberos, LDAP, SASL, libssh2,
// nghttp2, ...): ~6 ms of symbol binding and page faults at each start, a fifth of what
// `attachd process` spends before it reads a byte, for a filesystem + SQLite service that never
// calls them.
#pragma once
#include <curl/curl.h>
#include <stddef.h>

// Opens libcurl.so.4 on the first call: NULL when it is loaded, else why not ("<soname> cannot
// be loaded: <dlerror>"), a string that lives as long as the process.
const char *DelayLoad_curl(void);

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
