#include "JPEGWarnings.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

typedef struct {
  struct jpeg_error_mgr manager;
  struct jpeg_progress_mgr progress;
  jmp_buf jump;
  JPEGWarningsReport *report;
  int maxScans;
} Reader;

static JPEGWarningKind kindOf(int code) {
  switch (code) {
    case JWRN_EXTRANEOUS_DATA: return JPEGWarningExtraneousBytes;
    case JWRN_HIT_MARKER: return JPEGWarningScanEndedEarly;
    case JWRN_JPEG_EOF: return JPEGWarningEndOfFile;
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE: return JPEGWarningBadCode;
    case JWRN_MUST_RESYNC: return JPEGWarningLostRestart;
    default: return JPEGWarningOther;
  }
}

// libjpeg's error manager starts the Reader, so its pointer is the Reader's.
static void errorExit(j_common_ptr info) {
  Reader *reader = (Reader *)info->err;
  reader->report->failed = 1;
  (*info->err->format_message)(info, reader->report->message);
  longjmp(reader->jump, 1);
}

static void emitMessage(j_common_ptr info, int level) {
  if (level >= 0) return;  // trace messages
  Reader *reader = (Reader *)info->err;
  JPEGWarningsReport *report = reader->report;
  j_decompress_ptr decompress = (j_decompress_ptr)info;
  if (report->count < JPEGWarningsKept) {
    JPEGWarning *warning = &report->warnings[report->count];
    warning->code = info->err->msg_code;
    warning->kind = kindOf(warning->code);
    warning->scan = decompress->input_scan_number;
    warning->row = (int)decompress->input_iMCU_row;
    warning->rows = (int)decompress->total_iMCU_rows;
  }
  if (report->count == 0) (*info->err->format_message)(info, report->message);
  report->count += 1;
}

// Called between rows and scans: stops a file with more scans than allowed.
static void progress(j_common_ptr info) {
  Reader *reader = (Reader *)info->err;
  j_decompress_ptr decompress = (j_decompress_ptr)info;
  if (decompress->input_scan_number > reader->maxScans) {
    reader->report->failed = 1;
    snprintf(reader->report->message, sizeof reader->report->message, "more than %d scans", reader->maxScans);
    longjmp(reader->jump, 1);
  }
}

void JPEGWarnings_read(const unsigned char *data, size_t size, int maxScans, JPEGWarningsReport *report) {
  memset(report, 0, sizeof *report);
  struct jpeg_decompress_struct decompress;
  Reader reader;
  memset(&reader, 0, sizeof reader);
  reader.report = report;
  reader.maxScans = maxScans;
  // Only what the longjmp must not lose is volatile: the row buffer to free.
  JSAMPLE *volatile row = NULL;
  decompress.err = jpeg_std_error(&reader.manager);
  reader.manager.error_exit = errorExit;
  reader.manager.emit_message = emitMessage;
  if (setjmp(reader.jump)) {
    jpeg_destroy_decompress(&decompress);
    free(row);
    return;
  }
  jpeg_create_decompress(&decompress);
  reader.progress.progress_monitor = progress;
  decompress.progress = &reader.progress;
  jpeg_mem_src(&decompress, data, (unsigned long)size);
  jpeg_read_header(&decompress, TRUE);
  // Every coefficient is still entropy-decoded; only the inverse DCT and colour work shrink.
  decompress.scale_num = 1;
  decompress.scale_denom = 8;
  decompress.dct_method = JDCT_IFAST;
  decompress.do_fancy_upsampling = FALSE;
  decompress.do_block_smoothing = FALSE;
  jpeg_start_decompress(&decompress);
  row = malloc((size_t)decompress.output_width * (size_t)decompress.output_components);
  if (!row) {
    report->failed = 1;
    snprintf(report->message, sizeof report->message, "out of memory");
    jpeg_destroy_decompress(&decompress);
    return;
  }
  JSAMPROW rows[1] = {row};
  while (decompress.output_scanline < decompress.output_height) jpeg_read_scanlines(&decompress, rows, 1);
  jpeg_finish_decompress(&decompress);
  jpeg_destroy_decompress(&decompress);
  free(row);
}
