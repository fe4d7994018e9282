// Every warning libjpeg emits while reading a whole JPEG, with where in the image it happened.
//
// TurboJPEG 2.1 reports only its first warning, as text, and nothing of where it arose; the
// JPEG recovery rule (ImageCodecs' JPEGRecovery) needs each warning and, for a scan that runs out
// of data, the MCU row it ran out in. libjpeg's own API gives both, but reports errors by
// longjmp, which Swift cannot do: this small C reader keeps the longjmp on its side. It decodes
// at 1/8 scale with the fastest settings (every coefficient is still entropy-decoded: that is
// where the warnings come from) into one row, and is run only for files TurboJPEG warned about.
#pragma once
#include <stddef.h>

// What a libjpeg warning is about (libjpeg-turbo 2.1's JWRN_* codes, grouped).
typedef enum {
  // "N extraneous bytes before marker 0xXX": bytes skipped between segments or after a scan.
  JPEGWarningExtraneousBytes = 0,
  // "premature end of data segment": a scan's data ended (at a marker) before its last MCU;
  // the rest of the scan is decoded from zeros.
  JPEGWarningScanEndedEarly = 1,
  // "Premature end of JPEG file": the bytes ran out before EOI.
  JPEGWarningEndOfFile = 2,
  // "bad Huffman code" / "bad arithmetic code": the entropy-coded data is damaged.
  JPEGWarningBadCode = 3,
  // "found marker 0xXX instead of RSTn": restart markers out of step; MCUs are lost.
  JPEGWarningLostRestart = 4,
  // Any other warning (an unknown Adobe transform, an inconsistent progression …).
  JPEGWarningOther = 5,
} JPEGWarningKind;

typedef struct {
  JPEGWarningKind kind;
  int code;   // libjpeg's message code, for the log
  int scan;   // the scan being read (1-based; 0 while reading the headers)
  int row;    // the MCU row being read (input_iMCU_row)
  int rows;   // MCU rows in the image (total_iMCU_rows)
} JPEGWarning;

enum { JPEGWarningsKept = 16 };

typedef struct {
  int failed;  // libjpeg stopped with an error, or the scan limit was passed (see message)
  int count;   // every warning emitted; the first JPEGWarningsKept are in `warnings`
  JPEGWarning warnings[JPEGWarningsKept];
  char message[200];  // the error, else the first warning, as libjpeg words it
} JPEGWarningsReport;

// Reads `data` to its end with libjpeg, filling `report`. At most `maxScans` scans are read (a
// progressive file with thousands of scans is a CPU bomb; TurboJPEG's TJFLAG_LIMITSCANS is 500).
void JPEGWarnings_read(const unsigned char *data, size_t size, int maxScans, JPEGWarningsReport *report);
