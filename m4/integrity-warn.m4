dnl INTEGRITY_WARN_ADD(FLAG, [VARIABLE = WARN_CFLAGS])
dnl Append FLAG to VARIABLE when the C compiler accepts it, as util-linux's
dnl UL_WARN_ADD does: compiled with -Werror so that an unknown flag counts.
dnl A -Wno-X flag is tested as -WX (compilers take any -Wno-X silently).
AC_DEFUN([INTEGRITY_WARN_ADD], [
	m4_pushdef([integrity_var], [m4_default([$2], [WARN_CFLAGS])])
	AS_VAR_PUSHDEF([integrity_cache], [integrity_cv_cc_flag_$1])
	AC_CACHE_CHECK([whether $CC accepts $1], [integrity_cache], [
		integrity_save_CFLAGS=$CFLAGS
		integrity_flag=$1
		CFLAGS="$CFLAGS -Werror `echo "$integrity_flag" | sed 's/^-Wno-/-W/'`"
		AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
			[AS_VAR_SET([integrity_cache], [yes])],
			[AS_VAR_SET([integrity_cache], [no])])
		CFLAGS=$integrity_save_CFLAGS])
	AS_VAR_IF([integrity_cache], [yes], [integrity_var="$integrity_var $1"])
	AS_VAR_POPDEF([integrity_cache])
	m4_popdef([integrity_var])
])
