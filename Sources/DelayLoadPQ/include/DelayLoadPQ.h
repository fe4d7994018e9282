// libpq (the PostgreSQL index), loaded when first needed rather than when attachd starts, for
// the reason DelayLoadCurl.h gives; the mechanism is DelayLoad's (Sources/DelayLoad).
#pragma once
// libpq-fe.h includes its neighbours with quotes, so no -I/usr/include/postgresql is needed.
#include <postgresql/libpq-fe.h>

// Opens libpq.so.5 on the first call: NULL when it is loaded, else why not ("<soname> cannot be
// loaded: <dlerror>"), a string that lives as long as the process.
const char *DelayLoad_pq(void);

// PG_DIAG_* are character-literal macros ('C'), which Swift does not import.
int CPQ_diagSQLState(void);
int CPQ_diagMessagePrimary(void);
// Drops the connection's notices: libpq's default prints them on standard error ("relation
// already exists, skipping"), which would bypass the event log.
void CPQ_silenceNotices(PGconn *conn);
