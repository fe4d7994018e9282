#include <libpq-fe.h>

// PG_DIAG_* are character-literal macros ('C'), which Swift does not import.
static inline int CPQ_diagSQLState(void) { return PG_DIAG_SQLSTATE; }
static inline int CPQ_diagMessagePrimary(void) { return PG_DIAG_MESSAGE_PRIMARY; }

// A notice processor that drops notices: libpq's default prints them on standard error
// ("relation already exists, skipping"), which would bypass the event log.
static inline void CPQ_ignoreNotice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}
static inline void CPQ_silenceNotices(PGconn *conn) {
  PQsetNoticeProcessor(conn, CPQ_ignoreNotice, 0);
}
