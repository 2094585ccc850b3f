#pragma once
typedef struct { unsigned __int64 Part[2]; } _JBTYPE_STUB;
typedef _JBTYPE_STUB jmp_buf[16];
