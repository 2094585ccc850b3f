#pragma once
#define assert(e) ((void)0)
