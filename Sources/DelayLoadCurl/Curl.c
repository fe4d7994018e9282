#include "DelayLoadCurl.h"

#include "DelayLoad.h"

// --- libcurl (Debian 12: libcurl4, curl 7.88) ---------------------------------------------------
static DelayLoadLibrary curl = {"libcurl.so.4", 0, NULL, ""};

const char *DelayLoad_curl(void) { return DelayLoadLibrary_open(&curl); }

FORWARD(curl, CURLcode, curl_global_init, (long flags), (flags))
FORWARD(curl, CURL *, curl_easy_init, (void), ())
FORWARD_VOID(curl, curl_easy_cleanup, (CURL *handle), (handle))
FORWARD_VOID(curl, curl_easy_reset, (CURL *handle), (handle))
FORWARD(curl, CURLcode, curl_easy_perform, (CURL *handle), (handle))
FORWARD(curl, const char *, curl_easy_strerror, (CURLcode code), (code))
FORWARD(curl, char *, curl_version, (void), ())
FORWARD(curl, struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *text),
        (list, text))
FORWARD_VOID(curl, curl_slist_free_all, (struct curl_slist *list), (list))

typedef CURLcode (*Setopt)(CURL *, CURLoption, ...);
typedef CURLcode (*Getinfo)(CURL *, CURLINFO, ...);
static void *setopt, *getinfo;
#define SETOPT(name, type)                                                                 \
  CURLcode name(CURL *handle, CURLoption option, type value) {                             \
    Setopt function = (Setopt)DelayLoadLibrary_symbol(&curl, "curl_easy_setopt", &setopt); \
    return function(handle, option, value);                                                \
  }
SETOPT(CCurl_setopt_long, long)
SETOPT(CCurl_setopt_off_t, curl_off_t)
SETOPT(CCurl_setopt_string, const char *)
SETOPT(CCurl_setopt_pointer, void *)
SETOPT(CCurl_setopt_data_callback, CCurl_data_callback)
SETOPT(CCurl_setopt_seek_callback, curl_seek_callback)

CURLcode CCurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
  Getinfo function = (Getinfo)DelayLoadLibrary_symbol(&curl, "curl_easy_getinfo", &getinfo);
  return function(handle, info, value);
}
CURLcode CCurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
  Getinfo function = (Getinfo)DelayLoadLibrary_symbol(&curl, "curl_easy_getinfo", &getinfo);
  return function(handle, info, value);
}
