// libpq-fe.h includes its neighbours with quotes, so no -I/usr/include/postgresql is needed.
#include <postgresql/libpq-fe.h>
