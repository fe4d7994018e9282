#include "DelayLoad.h"
#include "Library.h"

// --- libcurl (Debian 12: libcurl4, curl 7.88) ---------------------------------------------------
static Library curl = {"libcurl.so.4", 0, NULL, ""};

const char *DelayLoad_curl(void) { return Library_open(&curl); }

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
#define SETOPT(name, type)                                                                      \
  CURLcode name(CURL *handle, CURLoption option, type value) {                                  \
    return ((Setopt)Library_symbol(&curl, "curl_easy_setopt", &setopt))(handle, option, value); \
  }
SETOPT(CCurl_setopt_long, long)
SETOPT(CCurl_setopt_off_t, curl_off_t)
SETOPT(CCurl_setopt_string, const char *)
SETOPT(CCurl_setopt_pointer, void *)
SETOPT(CCurl_setopt_data_callback, CCurl_data_callback)
SETOPT(CCurl_setopt_seek_callback, curl_seek_callback)

CURLcode CCurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
  return ((Getinfo)Library_symbol(&curl, "curl_easy_getinfo", &getinfo))(handle, info, value);
}
CURLcode CCurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
  return ((Getinfo)Library_symbol(&curl, "curl_easy_getinfo", &getinfo))(handle, info, value);
}

// --- libpq (Debian 12: libpq5, PostgreSQL 15) ---------------------------------------------------
static Library pq = {"libpq.so.5", 0, NULL, ""};

const char *DelayLoad_pq(void) { return Library_open(&pq); }

FORWARD_VOID(pq, PQclear, (PGresult *res), (res))
FORWARD(pq, char *, PQcmdTuples, (PGresult *res), (res))
FORWARD(pq, PostgresPollingStatusType, PQconnectPoll, (PGconn *conn), (conn))
FORWARD(pq, PGconn *, PQconnectStartParams,
        (const char *const *keywords, const char *const *values, int expand_dbname),
        (keywords, values, expand_dbname))
FORWARD(pq, int, PQconnectionNeedsPassword, (const PGconn *conn), (conn))
FORWARD_VOID(pq, PQconninfoFree, (PQconninfoOption *options), (options))
FORWARD(pq, PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg),
        (conninfo, errmsg))
FORWARD(pq, int, PQconsumeInput, (PGconn *conn), (conn))
FORWARD(pq, char *, PQerrorMessage, (const PGconn *conn), (conn))
FORWARD_VOID(pq, PQfinish, (PGconn *conn), (conn))
FORWARD(pq, int, PQflush, (PGconn *conn), (conn))
FORWARD_VOID(pq, PQfreemem, (void *ptr), (ptr))
FORWARD(pq, PGresult *, PQgetResult, (PGconn *conn), (conn))
FORWARD(pq, int, PQgetisnull, (const PGresult *res, int row, int field), (res, row, field))
FORWARD(pq, char *, PQgetvalue, (const PGresult *res, int row, int field), (res, row, field))
FORWARD(pq, int, PQisBusy, (PGconn *conn), (conn))
FORWARD(pq, int, PQnfields, (const PGresult *res), (res))
FORWARD(pq, int, PQntuples, (const PGresult *res), (res))
FORWARD(pq, char *, PQresultErrorField, (const PGresult *res, int code), (res, code))
FORWARD(pq, char *, PQresultErrorMessage, (const PGresult *res), (res))
FORWARD(pq, ExecStatusType, PQresultStatus, (const PGresult *res), (res))
FORWARD(pq, int, PQsendPrepare,
        (PGconn *conn, const char *name, const char *query, int count, const Oid *types),
        (conn, name, query, count, types))
FORWARD(pq, int, PQsendQuery, (PGconn *conn, const char *query), (conn, query))
FORWARD(pq, int, PQsendQueryPrepared,
        (PGconn *conn, const char *name, int count, const char *const *values, const int *lengths,
         const int *formats, int resultFormat),
        (conn, name, count, values, lengths, formats, resultFormat))
FORWARD(pq, int, PQsetnonblocking, (PGconn *conn, int arg), (conn, arg))
FORWARD(pq, int, PQsocket, (const PGconn *conn), (conn))
FORWARD(pq, ConnStatusType, PQstatus, (const PGconn *conn), (conn))
FORWARD(pq, PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), (conn))
FORWARD(pq, PQnoticeProcessor, PQsetNoticeProcessor,
        (PGconn *conn, PQnoticeProcessor processor, void *arg), (conn, processor, arg))

int CPQ_diagSQLState(void) { return PG_DIAG_SQLSTATE; }
int CPQ_diagMessagePrimary(void) { return PG_DIAG_MESSAGE_PRIMARY; }

static void ignoreNotice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}
void CPQ_silenceNotices(PGconn *conn) { PQsetNoticeProcessor(conn, ignoreNotice, 0); }
