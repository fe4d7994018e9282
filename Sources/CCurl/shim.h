#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic C functions, which Swift cannot call. Each
// wrapper below passes exactly the argument type its options document, so no value is ever
// read through the wrong type by va_arg (which would be undefined behaviour).

// Options taking a `long` (CURLOPT_NOBODY, CURLOPT_CONNECTTIMEOUT_MS, ...).
static inline CURLcode CCurl_setopt_long(CURL *handle, CURLoption option, long value) {
  return curl_easy_setopt(handle, option, value);
}

// Options taking a `curl_off_t` (CURLOPT_INFILESIZE_LARGE): 64 bits, unlike `long` options.
static inline CURLcode CCurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
  return curl_easy_setopt(handle, option, value);
}

// Options taking a NUL-terminated string, which curl copies (CURLOPT_URL, CURLOPT_USERNAME, ...).
static inline CURLcode CCurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
  return curl_easy_setopt(handle, option, value);
}

// Options taking an object pointer curl keeps until the transfer ends (CURLOPT_WRITEDATA,
// CURLOPT_ERRORBUFFER, CURLOPT_HTTPHEADER's list, ...).
static inline CURLcode CCurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
  return curl_easy_setopt(handle, option, value);
}

// CURLOPT_WRITEFUNCTION, CURLOPT_READFUNCTION and CURLOPT_HEADERFUNCTION all take this one
// function type; a function pointer must not travel through a `void *` vararg.
typedef size_t (*CCurl_data_callback)(char *buffer, size_t size, size_t count, void *context);
static inline CURLcode CCurl_setopt_data_callback(CURL *handle, CURLoption option,
                                                  CCurl_data_callback callback) {
  return curl_easy_setopt(handle, option, callback);
}

// CURLOPT_SEEKFUNCTION: lets curl rewind an upload it must send again on a fresh connection.
static inline CURLcode CCurl_setopt_seek_callback(CURL *handle, CURLoption option,
                                                  curl_seek_callback callback) {
  return curl_easy_setopt(handle, option, callback);
}

// Infos returning a `long` (CURLINFO_RESPONSE_CODE, CURLINFO_OS_ERRNO).
static inline CURLcode CCurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
  return curl_easy_getinfo(handle, info, value);
}

// Infos returning a `curl_off_t` (CURLINFO_FILETIME_T, CURLINFO_SIZE_UPLOAD_T, ...).
static inline CURLcode CCurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
  return curl_easy_getinfo(handle, info, value);
}
