#include "DelayLoadPQ.h"

#include "DelayLoad.h"

// --- libpq (Debian 12: libpq5, PostgreSQL 15) ---------------------------------------------------
static DelayLoadLibrary pq = {"libpq.so.5", 0, NULL, ""};

const char *DelayLoad_pq(void) { return DelayLoadLibrary_open(&pq); }

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
