/* common/banned.h: calls that are easy to misuse, turned into compile errors.
 * Included by every .c file of the project after its system headers. Use
 * snprintf, memcpy with a checked length, strtoll/strtod with endptr and
 * errno, gmtime_r and localtime_r instead. */
#ifndef COMMON_BANNED_H
#define COMMON_BANNED_H

#define SC_BANNED(f) sorry_##f##_is_banned_in_stepcast

#undef strcpy
#define strcpy(x, y) SC_BANNED(strcpy)
#undef strcat
#define strcat(x, y) SC_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) SC_BANNED(strncpy)
#undef strtok
#define strtok(x, y) SC_BANNED(strtok)
#undef sprintf
#define sprintf(...) SC_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) SC_BANNED(vsprintf)
#undef gets
#define gets(x) SC_BANNED(gets)
#undef atoi
#define atoi(x) SC_BANNED(atoi)
#undef atol
#define atol(x) SC_BANNED(atol)
#undef gmtime
#define gmtime(t) SC_BANNED(gmtime)
#undef localtime
#define localtime(t) SC_BANNED(localtime)

#endif
