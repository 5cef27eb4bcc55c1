/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal test harness for the user-space unit tests: CHECK() records a
 * failure with the values it compared and carries on.
 */
#ifndef FPGAGDR_TEST_CHECK_H
#define FPGAGDR_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

extern int test_failures;
extern int test_checks;

#define CHECK_EQ(a, b)							\
	do {								\
		unsigned long long _a = (unsigned long long)(a);	\
		unsigned long long _b = (unsigned long long)(b);	\
		test_checks++;						\
		if (_a != _b) {						\
			if (test_failures++ < 20)			\
				fprintf(stderr, "%s:%d: %s == %s: 0x%llx != 0x%llx\n", \
					__FILE__, __LINE__, #a, #b, _a, _b); \
		}							\
	} while (0)

#define CHECK(cond)	CHECK_EQ(!!(cond), 1)

#define RUN(test)							\
	do {								\
		int _before = test_failures;				\
		test();							\
		printf("%-4s %s\n", test_failures == _before ?		\
		       "ok" : "FAIL", #test);				\
	} while (0)

/* Print the totals; the exit status for main(). */
static inline int test_summary(void)
{
	printf("%d checks, %d failures\n", test_checks, test_failures);
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* FPGAGDR_TEST_CHECK_H */
